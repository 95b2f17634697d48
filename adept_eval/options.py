"""How option text from the command line is read: one rule for ``--model_args`` and one for
yes/no options, whoever declares the option (a model, a listener).

lm-eval hands options over as text (``check_samples=false``, ``graded=0``) or, from Python, as
values. A yes/no option accepts true/false, yes/no, on/off, 1/0 (any case) or a bool; anything
else is an error naming the option, never silently false: a misspelt ``check_samples=flase``
would otherwise switch the check off without a word.
"""

from __future__ import annotations

from .errors import UserError

__all__ = ["OptionError", "YES", "NO", "yes_no", "parse_model_args"]

YES = frozenset({"1", "true", "yes", "on"})
NO = frozenset({"0", "false", "no", "off"})


class OptionError(UserError, ValueError):
    """An option value that cannot be read (shown as one message naming the option)."""


def yes_no(value, name: str, where: str = "") -> bool:
    """``value`` of the yes/no option ``name`` (``where``: ``--model_args``, ``--metadata``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in YES:
        return True
    if text in NO:
        return False
    place = f"{where} " if where else ""
    raise OptionError(f"{place}{name}= must be true or false (or yes/no, on/off, 1/0), "
                      f"not {value!r}")


def parse_model_args(model_args) -> dict:
    """lm-eval's ``--model_args`` as a dict: its own ``key=value,...`` parser for text (blank text
    is no arguments), a copy of a dict, ``{}`` for None."""
    if isinstance(model_args, str):
        if not model_args.strip():
            return {}
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(model_args)
    return dict(model_args or {})
