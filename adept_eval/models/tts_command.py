"""``tts-command``: runs your synthesiser once per stimulus from a command template.

    lm_eval --model tts-command \\
        --model_args 'command=my_tts --text {text} --ref {reference} --out {output},name=my-tts'

The template is split like a shell would (shlex) and then each argument is filled in, so
``{text}`` stays one argument whatever it contains; no shell runs it. ``{reference}`` is the
natural ADEPT recording to transfer prosody from, ``{output}`` the .wav to write. A template
containing commas (which lm-eval's --model_args would split) goes in a file: ``command_file=``.
Each call has ``timeout`` seconds (default 300). Outputs are cached (see ``synthesizing``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path


from .base import Stimulus, SystemSetupError
from .synthesizing import SynthesizingSystem

_PLACEHOLDER = re.compile(r"\{(text|reference|output)\}")


class TTSCommandSystem(SynthesizingSystem):
    def __init__(self, command: str = "", command_file: str = "", timeout: float = 300,
                 name: str | None = None, **kwargs):
        if command_file:
            command = Path(command_file).read_text(encoding="utf-8").strip()
        if not command:
            raise SystemSetupError("tts-command needs command=TEMPLATE or command_file=PATH")
        self.template = shlex.split(command)
        if not self.template:
            raise SystemSetupError("tts-command: the command template is empty")
        if not any("{output}" in a for a in self.template):
            raise SystemSetupError(f"tts-command: the template must contain {{output}}: {command!r}")
        self.timeout = float(timeout)
        super().__init__(name=name or Path(self.template[0]).name, **kwargs)

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        if args.get("name"):
            return str(args["name"])
        command = args.get("command") or ""
        if not command and args.get("command_file"):
            command = Path(str(args["command_file"])).read_text(encoding="utf-8")
        parts = shlex.split(str(command))
        return Path(parts[0]).name if parts else "tts-command"

    def version(self) -> str:
        return "\x1f".join(self.template)

    def describe(self) -> dict:
        return {**super().describe(), "command": " ".join(self.template)}

    def synthesize_to(self, stimulus: Stimulus, output: Path) -> None:
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
