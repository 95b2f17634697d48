"""adept-eval's Hugging Face ``evaluate`` modules (``speech_judge``, ``prosody_transfer``) and
what they share."""

import numbers


def refuse_empty(metric: str, predictions, **inputs) -> None:
    """A ``ValueError`` saying so when a batch has no items, or one of its ``inputs`` (by name:
    ``references=...``) is None beside the others.

    ``evaluate`` picks a module's input format from the first example of the first batch, so
    empty lists fail inside it with a bare ``IndexError: list index out of range``, and a None
    input (``instruction_types=None``) with ``TypeError: 'NoneType' object is not
    subscriptable``, which name neither the metric nor the mistake. Each module's ``add_batch``
    (which ``compute`` calls too) asks here first."""
    given = {"predictions": predictions, **inputs}
    if any(v is not None for v in given.values()):
        missing = [name for name, v in given.items() if v is None]
        if missing:
            raise ValueError(f"{metric}: {', '.join(missing)} is None: give a list with one "
                             "entry per prediction")
    if predictions is not None and len(predictions) == 0:
        raise ValueError(f"{metric}: predictions is empty: there is nothing to score (give at "
                         "least one item, with as many references)")


def audio_feature():
    """The ``datasets`` feature of an audio input that may be a path or an array.

    ``evaluate`` picks one of a module's input formats from the first example of the first
    batch and encodes every item with it, so a batch of paths and arrays mixed failed on the
    first item of the other kind. Every item is stored in this one form instead
    (``one_audio_form``) and given back as it was given (``given_audio``).

    Returns:
        ``{"given": string, "path": string, "array": float32 sequence, "sampling_rate":
        int32}``; ``given`` says which of the others the item is ("path", "array" or "none").
    """
    import datasets

    return {"given": datasets.Value("string"), "path": datasets.Value("string"),
            "array": datasets.Sequence(datasets.Value("float32")),
            "sampling_rate": datasets.Value("int32")}


def one_audio_form(values):
    """Audio inputs given as paths, ``{"path": ...}`` or ``{"array", "sampling_rate"}``, mixed
    in any order, in ``audio_feature``'s one form.

    Args:
        values: the input list (None: left for ``refuse_empty`` to report).

    Returns:
        One dict per item. An item that is none of these keeps its text as ``path`` and a
        missing one (None) is ``given`` "none", so each is that item's counted failure
        (``bad_input``) rather than the batch's exception.
    """
    if values is None:
        return None
    out = []
    for value in values:
        item = {"given": "path", "path": "", "array": [], "sampling_rate": 0}
        if isinstance(value, dict) and "array" in value:
            rate = value.get("sampling_rate")
            whole = isinstance(rate, numbers.Real) and float(rate).is_integer()
            # a rate that is not a whole number is stored as 0, which the audio checks refuse
            item.update(given="array", array=[] if value["array"] is None else value["array"],
                        sampling_rate=int(rate) if whole else 0)
        elif isinstance(value, dict):
            item["path"] = str(value.get("path") or "")
        elif value is None:
            item["given"] = "none"
        else:
            item["path"] = str(value)
        out.append(item)
    return out


def given_audio(item: dict):
    """An item stored by ``one_audio_form`` as the audio checks take it.

    Args:
        item: the stored form, as evaluate gives it back.

    Returns:
        The path (str), ``{"array", "sampling_rate"}``, or None when no audio was given.
    """
    if item["given"] == "array":
        return {"array": item["array"], "sampling_rate": item["sampling_rate"]}
    return item["path"] if item["given"] == "path" else None
