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
    """Read the yes/no option ``name``.

    Args:
        value: the option's value: a bool, 0/1, or text (true/false, yes/no, on/off, 1/0).
        name: the option's name, for the message.
        where: where the option was given (``--model_args``, ``--metadata``), for the message.

    Returns:
        The option's value as a bool.

    Raises:
        OptionError: when the value is none of the yes/no spellings, so that a misspelling
            never reads as false.
    """
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
    """Read the numeric option ``name`` by the one rule for numbers.

    Anything unreadable or out of range is an error naming the option, never a traceback from
    ``int()`` or ``float()``.

    Args:
        value: the option's value: text or a number.
        name: the option's name, for the message.
        where: where the option was given (``--model_args``, ``--metadata``), for the message.
        whole: read an int rather than a float.
        least: the smallest value allowed, if any.
        positive: require a value above 0.
        optional: accept None, "" or "none" as no value.
        fail: a function from the problem to the exception to raise, for a caller with its own
            error type; default ``OptionError``.
        most: the largest value allowed, if any.

    Returns:
        The value as an int (``whole``) or a finite float; None for an ``optional`` option
        given no value.

    Raises:
        OptionError: (or what ``fail`` returns) when the value is not a finite number, not
            whole when ``whole``, or out of the range ``least``/``most``/``positive`` sets.
    """
    def problem(text: str) -> Exception:
        if fail is not None:
            return fail(text)
        place = f"{where} " if where else ""
        return OptionError(f"{place}{name}={value}: {text}")

    if optional and (value is None or str(value).strip().lower() in ("", "none")):
        return None
    amount = _finite(value, whole)
    if amount is None:
        raise problem("not a whole number" if whole else "not a number")
    amount = int(amount) if whole else amount
    broken = _out_of_range(amount, least, most, positive)
    if broken:
        raise problem(broken)
    return amount


def _finite(value, whole: bool) -> float | None:
    """``value`` read as a finite float (whole when ``whole``), or None when it is not one
    (a bool, text that is no number, NaN, an infinity)."""
    if isinstance(value, bool):
        return None
    try:
        amount = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None
    if amount != amount or amount in (float("inf"), float("-inf")):
        return None
    if whole and amount != int(amount):
        return None
    return amount


def _out_of_range(amount: float, least: float | None, most: float | None,
                  positive: bool) -> str | None:
    """The first range rule ``amount`` breaks, as the message's problem text; None if none."""
    if positive and amount <= 0:
        return "must be more than 0"
    if least is not None and amount < least:
        return f"must be at least {least:g}"
    if most is not None and amount > most:
        return f"must be at most {most:g}"
    return None


def text(value, name: str, where: str = "", *, optional: bool = False) -> str | None:
    """Read the text option ``name`` (a folder, a pattern, a name).

    A JSON ``--model_args`` can hand over anything (``{"path": ["a"]}``); checking here gives an
    error naming the option, never a TypeError from whatever first uses the value.

    Args:
        value: the option's value: a string, or a number read as its text.
        name: the option's name, for the message.
        where: where the option was given, for the message.
        optional: accept None as no value.

    Returns:
        The value as text; None for an ``optional`` option given None.

    Raises:
        OptionError: when the value is a list, an object, true/false or null (unless
            ``optional``), naming the type expected.
    """
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
    """Make an argparse ``type`` that reads a command-line number by the one rule (``number``).

    Args:
        what: what the option expects, for the message ("a whole number of seconds").
        **rules: ``number``'s keyword rules (``whole``, ``least``, ``most``, ...).

    Returns:
        A function from the option's text to its number; it raises
        ``argparse.ArgumentTypeError`` naming ``what`` and the problem, so argparse prints its
        one message rather than a traceback or a value taken silently.
    """
    import argparse

    def read(text: str):
        return number(text, "value", fail=lambda problem: argparse.ArgumentTypeError(
            f"expected {what}, got {text!r} ({problem})"), **rules)
    return read


def parse_model_args(model_args) -> dict:
    """Read lm-eval's ``--model_args`` as a dict.

    Args:
        model_args: ``key=value,...`` text (read by lm-eval's own parser; blank text is no
            arguments), a dict, or None.

    Returns:
        The arguments as a new dict (``{}`` for None or blank text).
    """
    if isinstance(model_args, str):
        if not model_args.strip():
            return {}
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(model_args)
    return dict(model_args or {})
