"""The judge's prompt: VStyle's speech-judge template, filled through its two placeholders.

The built-in template (``adept_eval/data/speech_judge_prompt.txt``) is VStyle's prompt for the
"instruction" category; its wording is the specification and is shipped verbatim. Users may give
their own template, or one per instruction type (e.g. VStyle's other category prompts); every
template must contain ``{instruction_type}`` and ``{input_instruction}``. Filling is plain text
substitution, so braces elsewhere in a template are left alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from adept_eval.errors import PromptError

PLACEHOLDERS = ("{instruction_type}", "{input_instruction}")


@dataclass(frozen=True)
class Prompt:
    """A judge prompt template and where it comes from."""

    template: str
    source: str  # file name, or "builtin:vstyle-instruction"

    @cached_property
    def sha256(self) -> str:  # once per prompt, not twice per item (a template is ~6.5 kB)
        """The template's sha256 (hex), part of the judge's identity and cache keys."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()

    def render(self, instruction_type: str, instruction: str) -> str:
        """The template with its two placeholders filled.

        Args:
            instruction_type: Fills ``{instruction_type}``.
            instruction: Fills ``{input_instruction}``.

        Returns:
            The prompt text.
        """
        return (self.template.replace("{instruction_type}", instruction_type)
                .replace("{input_instruction}", instruction))


def builtin() -> Prompt:
    """The built-in prompt: VStyle's "instruction" template, shipped verbatim."""
    text = resources.files("adept_eval").joinpath("data/speech_judge_prompt.txt").read_text(
        encoding="utf-8")
    return Prompt(text, "builtin:vstyle-instruction")


def _read_source(text: str) -> tuple[str, str]:
    """A prompt's template text and name: a file's contents and name when ``text`` is one
    line naming a file, else ``text`` itself, named "inline".

    Args:
        text: a file path or template text.

    Returns:
        ``(template text, name)``.

    Raises:
        PromptError: the file cannot be read.
    """
    if "\n" not in text and Path(text).expanduser().is_file():
        path = Path(text).expanduser()
        try:
            return path.read_text(encoding="utf-8"), path.name
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptError(f"prompt file {path}: cannot be read ({exc})") from None
    return text, "inline"


def load(source: str | Path | Prompt | None) -> Prompt:
    """A prompt from what a user gives.

    Args:
        source: None (the built-in), a Prompt, a file path, or template text.

    Returns:
        The prompt.

    Raises:
        PromptError: The file cannot be read, or the template lacks a placeholder.
    """
    if source is None:
        return builtin()
    if isinstance(source, Prompt):
        return source
    text, name = _read_source(str(source))
    missing = [p for p in PLACEHOLDERS if p not in text]
    if missing and name == "inline" and "\n" not in text and "{" not in text:
        raise PromptError(f"prompt {text!r}: no such file (and, as template text, it lacks the "
                          f"placeholder(s) {', '.join(missing)})")
    if missing:
        raise PromptError(f"prompt {name!r} lacks the placeholder(s) {', '.join(missing)}")
    return Prompt(text, name)


@dataclass(frozen=True)
class PromptSet:
    """A default prompt plus optional per-instruction-type prompts."""

    default: Prompt
    by_type: tuple[tuple[str, Prompt], ...] = ()

    @classmethod
    def build(cls, prompt=None, prompts: dict | None = None) -> "PromptSet":
        """A prompt set from what a user gives.

        Args:
            prompt: The default prompt (``load``'s ``source``).
            prompts: Instruction type or category -> prompt, or None.

        Returns:
            The set.

        Raises:
            PromptError: A prompt cannot be loaded.
        """
        by_type = tuple(sorted((str(k), load(v)) for k, v in (prompts or {}).items()))
        return cls(load(prompt), by_type)

    def for_type(self, instruction_type: str) -> Prompt:
        """The prompt for a type; a per-type key matches the type or its category prefix
        (``instruction`` matches ``instruction/emotion_command``).

        Args:
            instruction_type: The item's instruction type.

        Returns:
            Its prompt, else the default.
        """
        table = dict(self.by_type)
        if instruction_type in table:
            return table[instruction_type]
        category = instruction_type.split("/")[0]
        return table.get(category, self.default)

    def identity(self) -> dict:
        """The prompts' sources and sha256s, as the judge's identity records them."""
        out = {"prompt": self.default.source, "prompt_sha256": self.default.sha256}
        if self.by_type:
            out["prompts_by_type"] = {k: {"source": p.source, "sha256": p.sha256}
                                      for k, p in self.by_type}
        return out
