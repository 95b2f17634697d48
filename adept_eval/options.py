"""How option text from the command line is read: one rule for ``--model_args`` and one for
yes/no options, whoever declares the option (a model, a listener).

lm-eval hands options over as text (``check_samples=false``, ``graded=0``) or, from Python, as
values. A yes/no option accepts true/false, yes/no, on/off, 1/0 (any case) or a bool; anything
else is an error naming the option, never silently false: a misspelt ``check_samples=flase``
would otherwise switch the check off without a word.
"""

from __future__ import annotations

from adept_eval.errors import OptionError

__all__ = ["YES", "NO", "number", "text", "yes_no", "parse_model_args"]

YES = frozenset({"1", "true", "yes", "on"})
NO = frozenset({"0", "false", "no", "off"})


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


def number(value, name: str, where: str = "", *, whole: bool = False, least: float | None = None,
           positive: bool = False, optional: bool = False, fail=None, most: float | None = None):
    """``value`` of the numeric option ``name`` as an int (``whole``) or a float: text or a
    number, finite, at least ``least``, at most ``most``, above 0 if ``positive``; None for an
    ``optional`` option given None, "" or "none". Anything else is an error naming the option
    (``fail``: a function from the problem to the exception to raise, for a caller with its own
    type; default ``OptionError``) - never a traceback from ``int()`` or ``float()``."""
    def problem(text: str) -> Exception:
        if fail is not None:
            return fail(text)
        place = f"{where} " if where else ""
        return OptionError(f"{place}{name}={value}: {text}")

    if optional and (value is None or str(value).strip().lower() in ("", "none")):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        x = float(str(value).strip()) if isinstance(value, str) else float(value)
        if x != x or x in (float("inf"), float("-inf")) or (whole and x != int(x)):
            raise ValueError
    except (TypeError, ValueError):
        raise problem("not a whole number" if whole else "not a number") from None
    x = int(x) if whole else x
    if positive and x <= 0:
        raise problem("must be more than 0")
    if least is not None and x < least:
        raise problem(f"must be at least {least:g}")
    if most is not None and x > most:
        raise problem(f"must be at most {most:g}")
    return x


def text(value, name: str, where: str = "", *, optional: bool = False) -> str | None:
    """``value`` of the text option ``name`` (a folder, a pattern, a name) as text: a string, or
    a number read as its text; None for an ``optional`` option given None. A JSON
    ``--model_args`` can hand over anything else (``{"path": ["a"]}``): a list, an object or
    true/false is an error naming the option and the type expected, never a TypeError from
    whatever first uses the value."""
    if optional and value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    place = f"{where} " if where else ""
    kind = {list: "a list", tuple: "a list", dict: "an object", bool: "true/false",
            type(None): "null"}.get(type(value), type(value).__name__)
    raise OptionError(f"{place}{name}: expected text (a string), got {kind}")


def arg_type(what: str, **rules):
    """An argparse ``type`` reading a command-line number by the one rule (``number``, with its
    ``rules``): a bad value is argparse's one message naming the option, then ``what`` it
    expects and the problem, never a traceback or a value taken silently."""
    import argparse

    def read(text: str):
        return number(text, "value", fail=lambda problem: argparse.ArgumentTypeError(
            f"expected {what}, got {text!r} ({problem})"), **rules)
    return read


def parse_model_args(model_args) -> dict:
    """lm-eval's ``--model_args`` as a dict: its own ``key=value,...`` parser for text (blank text
    is no arguments), a copy of a dict, ``{}`` for None."""
    if isinstance(model_args, str):
        if not model_args.strip():
            return {}
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(model_args)
    return dict(model_args or {})
