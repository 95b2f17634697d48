"""A test folder that may be made public: its design encrypted, the key kept apart.

A test's ``test.json`` holds what participants must never see: which audio token is which
system's, the attention checks' beeps, the headphone check's key, the completion codes. A
Docker Space's files are public when the Space is, so the folder copied into its image is a
*sealed* copy: the audio, and ``test.sealed``, the design encrypted with a key of its own
(Fernet: AES-128-CBC with an HMAC-SHA256, from the ``cryptography`` package). The key goes to the
Space as a secret, ``ADEPT_LISTENING_KEY``, and ``load_test`` opens the design with it in
memory only; nothing secret is ever written into the sealed folder (``design.seal_test``
writes it).
"""

from __future__ import annotations

import os
from pathlib import Path

from adept_eval.errors import DesignError

SEALED_FILE = "test.sealed"
KEY_ENV = "ADEPT_LISTENING_KEY"
CRYPTO_HINT = ("sealed tests need the cryptography package "
               "(pip install 'adept-eval[listening-test]')")


def _fernet(key: bytes):
    """A Fernet cipher of ``key``.

    Raises:
        DesignError: cryptography is not installed, or the key is malformed.
    """
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        raise DesignError(CRYPTO_HINT) from None
    try:
        return Fernet(key)
    except ValueError:
        raise DesignError(f"{KEY_ENV} is not a sealed test's key (44 characters of URL-safe "
                          "base64, as `listening-test seal` printed it)") from None


def encrypt(plain: bytes) -> tuple[bytes, str]:
    """Encrypt a design with a new key.

    Args:
        plain: The design's JSON text.

    Returns:
        (the sealed bytes, the key that opens them).

    Raises:
        DesignError: cryptography is not installed.
    """
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        raise DesignError(CRYPTO_HINT) from None
    key = Fernet.generate_key()
    return Fernet(key).encrypt(plain), key.decode()


def unseal(folder: Path) -> bytes:
    """Open a sealed test's design with the key in ``ADEPT_LISTENING_KEY``.

    Args:
        folder: The sealed test.

    Returns:
        The design's JSON text, as ``test.json`` held it.

    Raises:
        DesignError: No key in the environment, or not this test's.
    """
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise DesignError(f"{folder / SEALED_FILE}: a sealed test; its key goes in {KEY_ENV} "
                          "(a Space secret)")
    fernet = _fernet(key.encode())  # a clear message without cryptography installed
    from cryptography.fernet import InvalidToken

    try:
        return fernet.decrypt((folder / SEALED_FILE).read_bytes())
    except InvalidToken:
        raise DesignError(f"{folder / SEALED_FILE}: the key in {KEY_ENV} does not open it "
                          "(another test's key, or the file was changed)") from None
