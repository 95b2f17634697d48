"""Run a real executable as a user sees it: on a terminal of a given width (a pseudo-terminal)
or redirected to a file, and read what it printed without colour codes."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def plain(text: str) -> str:
    """``text`` without terminal escape sequences and carriage returns."""
    return _ESCAPES.sub("", text).replace("\r", "")


def on_terminal(argv: list[str], columns: int, env: dict | None = None, cwd=None,
                timeout: float = 600) -> tuple[int, str]:
    """Run ``argv`` with its stdout and stderr on a pseudo-terminal ``columns`` wide.

    Args:
        argv: the command.
        columns: the terminal's width.
        env: the environment (None: this process's), without COLUMNS (the terminal says it).
        cwd: the working folder.
        timeout: seconds before the command is killed.

    Returns:
        (exit status, what it printed, escape sequences removed).
    """
    env = dict(os.environ if env is None else env)
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    env["TERM"] = "xterm-256color"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env,
                            cwd=cwd, close_fds=True)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        status = proc.wait(timeout=timeout)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return status, plain(b"".join(chunks).decode("utf-8", "replace"))


def redirected(argv: list[str], columns: int | None = 80, env: dict | None = None, cwd=None,
               timeout: float = 600) -> tuple[int, str, str]:
    """Run ``argv`` with stdout and stderr redirected (pipes), ``COLUMNS`` set as a user's
    shell exports it.

    Returns:
        (exit status, stdout, stderr).
    """
    env = dict(os.environ if env is None else env)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)
    return done.returncode, done.stdout, done.stderr
