"""adept-eval's Hugging Face ``evaluate`` modules (``speech_judge``, ``prosody_transfer``) and
what they share."""


def refuse_empty(metric: str, predictions) -> None:
    """A ``ValueError`` saying so when a batch has no items.

    ``evaluate`` picks a module's input format from the first example of the first batch, so
    empty lists fail inside it with a bare ``IndexError: list index out of range``, which names
    neither the metric nor the mistake. Each module's ``add_batch`` (which ``compute`` calls
    too) asks here first."""
    if predictions is not None and len(predictions) == 0:
        raise ValueError(f"{metric}: predictions is empty: there is nothing to score (give at "
                         "least one item, with as many references)")
