from .prosody_transfer import ProsodyTransfer  # noqa: F401
