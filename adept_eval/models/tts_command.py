"""``tts-command``: runs your synthesiser once per stimulus from a command template.

    lm_eval --model tts-command \\
        --model_args 'command=my_tts --text {text} --ref {reference} --out {output},name=my-tts'

The template is split like a shell would (shlex) and then each argument is filled in, so
``{text}`` stays one argument whatever it contains; no shell runs it. ``{reference}`` is the
natural ADEPT recording to transfer prosody from, ``{output}`` the .wav to write. A template
containing commas (which lm-eval's --model_args would split) goes in a file: ``command_file=``.
Each call has ``timeout`` seconds (default 300). Outputs are cached (see ``synthesizing``).

The template is recorded with every logged sample, so anything secret-looking in it is redacted
there (see ``redact_command``) and the exact template is identified by its sha256 only. Keep keys
out of templates anyway: the command inherits the environment, so your program can read them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path


from adept_eval.options import number
from adept_eval.secrecy import redact_words
from adept_eval.errors import SystemSetupError
from adept_eval.models.base import Stimulus
from adept_eval.models.synthesizing import SynthesizingSystem

_FILLED = {"text", "reference", "output"}
_PLACEHOLDER = re.compile(r"\{(text|reference|output)\}")
#: anything written as a placeholder (a name in braces); JSON and other braces are not
_NAMED = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def redact_command(args: list[str]) -> str:
    """The template as one line with secret-looking values replaced by ``<redacted>``, by the
    rule ``settings`` refuses options with and ``secrecy.find_secrets`` refuses uploads with
    (``secrecy.redact_words``): values of options named like secrets (``--api-key X``,
    ``--token=X``, ``key=X``), secret-named URL query parameters (``?token=X``),
    credential-shaped strings (``sk-...``, ``hf_...``, ``user:pass@`` in URLs, ``Bearer ...``)
    and the values of secret-named environment variables. Placeholders are never redacted."""
    return shlex.join(redact_words(args, keep=lambda a: bool(_PLACEHOLDER.fullmatch(a)))[0])


def _read_command_file(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise SystemSetupError(f"tts-command: command_file={path}: cannot be read ({reason})"
                               ) from None


def _check_program(program: str) -> None:
    """The template's program must exist before the first stimulus: otherwise every stimulus
    fails alike, one by one, and the run reports a system that scored nothing."""
    if _PLACEHOLDER.search(program):
        return  # decided per stimulus
    if os.sep in program or (os.altsep and os.altsep in program):
        found = os.path.isfile(program) and os.access(program, os.X_OK)
    else:
        found = shutil.which(program) is not None
    if not found:
        raise SystemSetupError(f"tts-command: cannot run {program!r}, the command's program: "
                               "not an executable file" + ("" if os.sep in program
                                                           else " on PATH"))


def _parsed_template(command: str) -> list[str]:
    """The command template split into arguments, checked.

    Args:
        command: the template as given (``command=`` or the file's contents).

    Returns:
        The template's arguments.

    Raises:
        SystemSetupError: the template is empty, lacks ``{output}``, or has an unknown
            placeholder (a typo such as ``{txt}`` would reach the synthesiser as literal text,
            every time).
    """
    template = shlex.split(command)
    if not template:
        raise SystemSetupError("tts-command: the command template is empty")
    if not any("{output}" in a for a in template):
        raise SystemSetupError(f"tts-command: the template must contain {{output}}: {command!r}")
    unknown = sorted({m for a in template for m in _NAMED.findall(a)} - _FILLED)
    if unknown:
        raise SystemSetupError(
            "tts-command: unknown placeholder " + ", ".join(f"{{{u}}}" for u in unknown)
            + f" in the template {command!r}: the placeholders are {{text}}, {{reference}} "
            "and {output}")
    return template


class TTSCommandSystem(SynthesizingSystem):
    """A system that runs a command-line synthesiser once per stimulus."""
    def __init__(self, command: str = "", command_file: str = "", timeout: float = 300,
                 name: str | None = None, **kwargs):
        """A system that runs a command line per stimulus.

        Args:
            command: the command template, with ``{text}``, ``{reference}`` and ``{output}``.
            command_file: a file holding the template (read instead of ``command``).
            timeout: seconds one synthesis may take.
            name: the system's name; by default the program's.
            **kwargs: passed to ``SynthesizingSystem``.

        Raises:
            SystemSetupError: no template, a malformed one, or a program that cannot be run.
        """
        self.refuse_unknown_args(kwargs)
        if command_file:
            command = _read_command_file(command_file)
        if not command:
            raise SystemSetupError("tts-command needs command=TEMPLATE or command_file=PATH")
        self.template = _parsed_template(command)
        _check_program(self.template[0])
        self.timeout = number(timeout, "timeout", "--model_args", positive=True)
        super().__init__(name=name or Path(self.template[0]).name, **kwargs)

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        """The system's name: ``name=``, else the command's program.

        Args:
            args: the ``--model_args``.

        Returns:
            The name.
        """
        if args.get("name"):
            return str(args["name"])
        command = args.get("command") or ""
        if not command and args.get("command_file"):
            command = _read_command_file(str(args["command_file"]))
        parts = shlex.split(str(command))
        return Path(parts[0]).name if parts else "tts-command"

    def version(self) -> str:
        """What the cache key includes of the system: the exact template.

        Returns:
            The template's arguments, joined.
        """
        return "\x1f".join(self.template)

    def describe(self) -> dict:
        """No secrets: the template redacted, and the exact template only as a hash."""
        exact = hashlib.sha256("\x1f".join(self.template).encode()).hexdigest()
        return {**super().describe(), "command": redact_command(self.template),
                "command_sha256": exact}

    def synthesize_to(self, stimulus: Stimulus, output: Path) -> None:
        """Run the command for one stimulus.

        Args:
            stimulus: the stimulus.
            output: the .wav path the command writes.

        Raises:
            RuntimeError: the command timed out, could not run, or exited with an error.
        """
        values = {"text": stimulus.text, "reference": stimulus.reference_audio,
                  "output": str(output)}
        # one pass, so a text that itself contains "{output}" is not substituted twice, and
        # other braces in the template (JSON, say) are left alone
        args = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in self.template]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=self.timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"timed out after {self.timeout:g} s") from None
        except OSError as exc:
            raise RuntimeError(f"could not run {args[0]!r}: {exc}") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
            raise RuntimeError(f"exit code {done.returncode}: {' | '.join(tail)}")
