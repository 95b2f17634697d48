"""adept-eval's Hugging Face ``evaluate`` modules (``speech_judge``, ``prosody_transfer``) and
what they share."""


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
