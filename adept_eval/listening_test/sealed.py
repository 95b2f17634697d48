"""A test folder that may be made public: its design encrypted, the key kept apart.

A test's ``test.json`` holds what participants must never see: which audio token is which
system's, the attention checks' beeps, the headphone check's key, the completion codes. A
Docker Space's files are public when the Space is, so the folder copied into its image is a
*sealed* copy: the audio, and ``test.sealed``, the design encrypted with a key of its own
(Fernet: AES-128-CBC with an HMAC-SHA256, from the ``cryptography`` package). The key goes to the
Space as a secret, ``ADEPT_LISTENING_KEY``, and ``load_test`` opens the design with it in
memory only; nothing secret is ever written into the sealed folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from adept_eval.errors import DesignError

SEALED_FILE = "test.sealed"
KEY_ENV = "ADEPT_LISTENING_KEY"
CRYPTO_HINT = "sealed tests need the cryptography package (pip install 'adept-eval[listening-test]')"


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


def seal(folder: str | Path, out: str | Path) -> str:
    """Write a sealed copy of a built test: its audio, and its design encrypted.

    Args:
        folder: The built test.
        out: The folder to write (new, or empty).

    Returns:
        The key that opens it (to be kept as a secret, never in the folder).

    Raises:
        DesignError: ``folder`` holds no test, or ``out`` is not empty.
    """
    from adept_eval.listening_test.design import AUDIO_DIR, CONFIG_FILE, load_test

    folder, out = Path(folder), Path(out)
    config = load_test(folder)  # a clear message for a folder that is no test
    if out.exists() and any(out.iterdir()):
        raise DesignError(f"{out}: not empty; seal the test into a new folder")
    try:
        from cryptography.fernet import Fernet
    except ImportError:
        raise DesignError(CRYPTO_HINT) from None
    key = Fernet.generate_key()
    (out / AUDIO_DIR).mkdir(parents=True)
    for name in config.files.values():
        shutil.copyfile(folder / AUDIO_DIR / name, out / AUDIO_DIR / name)
    (out / SEALED_FILE).write_bytes(Fernet(key).encrypt((folder / CONFIG_FILE).read_bytes()))
    return key.decode()


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
    from cryptography.fernet import InvalidToken

    try:
        return _fernet(key.encode()).decrypt((folder / SEALED_FILE).read_bytes())
    except InvalidToken:
        raise DesignError(f"{folder / SEALED_FILE}: the key in {KEY_ENV} does not open it "
                          "(another test's key, or the file was changed)") from None
