"""Helpers for fault tests: running a command as a user the file permissions apply to.

Tests run as root in CI containers, and root ignores file modes (CAP_DAC_OVERRIDE), so a
``chmod 000`` folder is readable to it. To make EACCES real, the command under test runs in a
subprocess that has lost that privilege: as root under util-linux's ``setpriv`` with
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH removed from its bounding set (so it still runs the
interpreter wherever it is installed, e.g. under /root), else as ``nobody``, else (not root) as
ourselves.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


def unprivileged_user() -> str | None:
    """The user to run permission tests as: None = ourselves (not root), else 'nobody'."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no 'nobody' user to drop privileges to")
    return "nobody"


def public_dir() -> Path:
    """A fresh folder under the system temp dir that an unprivileged user can enter."""
    path = Path(tempfile.mkdtemp(prefix="adept-faults-"))
    path.chmod(0o777)
    return path


def open_up(path: Path) -> None:
    """Make a tree readable (and its folders writable) for the unprivileged user."""
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o777)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


def without_dac_override() -> list[str] | None:
    """The command prefix that runs a program as root without file-mode overrides, or None."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]


def run_as_unprivileged(args: list[str], env: dict, cwd: Path, timeout: float = 600):
    kwargs, user = {}, None
    prefix = without_dac_override()
    if prefix is not None:
        args = [*prefix, *args]
    else:
        user = unprivileged_user()
        if user is not None:
            kwargs = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
    full_env = {"PATH": os.environ.get("PATH", ""), "TQDM_DISABLE": "1", "HOME": str(cwd),
                "HF_HOME": str(cwd / "hf"), "PYTHONDONTWRITEBYTECODE": "1", **env}
    try:
        return subprocess.run(args, capture_output=True, text=True, env=full_env, cwd=cwd,
                              timeout=timeout, **kwargs)
    except PermissionError as exc:  # e.g. the interpreter lives under root's private home
        pytest.skip(f"the unprivileged user {user!r} cannot run this Python ({exc}); the "
                    "permission tests need an interpreter every user may execute")


def console_script(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        pytest.skip(f"{name} console script not found")
    return found


def ctrl_c_as_at_a_terminal() -> None:
    """``preexec_fn`` for a process a test will interrupt with SIGINT: restore SIGINT's default
    disposition, as a terminal user's process has it. A process started in the background by
    a shell without job control (a CI runner's `cmd &`, nohup) inherits SIGINT *ignored*, and
    Python keeps it ignored, so a test's Ctrl-C would do nothing there and its run would
    simply go on to the end (it did: the test then saw the run's own last message)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
