"""The feature store's files: features, sentence profiles and reference spreads packed into
plain float64 ``.npy`` arrays, written atomically and read back bit for bit.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from adept_eval.signal.prosody._comparison import TERMS, ReferenceSpread
from adept_eval.signal.prosody._features import Features
from adept_eval.signal.prosody._profiles import SentenceProfiles


# One float64 array per recording: a header row (noise floor, frame count, column count), then
# per frame F0, energy, speech (0/1) and the MFCCs. A plain .npy loads in ~0.1 ms where an
# .npz of five arrays takes ~0.5 ms (a zip file opened per recording, ~200 per run); float64
# holds every value exactly, so the features read back are the ones extracted, bit for bit.
_FIXED_COLUMNS = 3


def pack_features(features: Features) -> np.ndarray:
    """One recording's features as one float64 array (the layout above).

    Args:
        features: The features.

    Returns:
        The (frames + 1, 3 + coefficients) array.
    """
    n, k = features.mfcc.shape  # (frames, coefficients)
    out = np.zeros((n + 1, _FIXED_COLUMNS + k))
    out[0, :3] = (features.noise_floor, n, k)
    out[1:, 0], out[1:, 1], out[1:, 2] = features.f0, features.energy, features.speech
    out[1:, _FIXED_COLUMNS:] = features.mfcc
    return out


def unpack_features(a: np.ndarray) -> Features:
    """The features ``pack_features`` packed into ``a``.

    Args:
        a: The array read from a feature file.

    Returns:
        The features.

    Raises:
        ValueError: ``a`` is not a feature file's array.
    """
    if a.ndim != 2 or a.shape[1] < _FIXED_COLUMNS or a.dtype != np.float64:
        raise ValueError("not a feature file")
    n, k = int(a[0, 1]), int(a[0, 2])
    if a.shape != (n + 1, _FIXED_COLUMNS + k):
        raise ValueError("feature file of the wrong shape")
    body = a[1:]
    return Features(np.ascontiguousarray(body[:, 0]), np.ascontiguousarray(body[:, 1]),
                    np.ascontiguousarray(body[:, _FIXED_COLUMNS:]), body[:, 2] > 0.5,
                    float(a[0, 0]))


PROFILE_ARRAYS = ("f0", "energy", "tempo", "length", "pause", "level", "power", "salience",
                   "boundary")


def read_entry(file: Path, unpack):
    """A cache entry, unpacked.

    Args:
        file: The entry's ``.npy`` file.
        unpack: Turns the array read into the entry; raises ValueError or IndexError for an
            array that is not one.

    Returns:
        The entry, or None when it is absent or damaged (then it is rebuilt).
    """
    if not file.exists():
        return None
    try:
        return unpack(np.load(file, allow_pickle=False))
    except (OSError, ValueError, IndexError):
        return None


def write_entry(file: Path, array: np.ndarray) -> None:
    """Write a cache entry atomically: readers in other processes see all of it or none.

    Args:
        file: The entry's ``.npy`` file (its folder is made).
        array: The packed entry.
    """
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f"{file.stem}.{os.getpid()}.tmp.npy")
    np.save(tmp, array, allow_pickle=False)
    os.replace(tmp, file)


def pack_profiles(profiles: SentenceProfiles) -> np.ndarray:
    """A sentence's profiles as one float64 vector (a plain ``.npy`` loads ~5x faster than an
    ``.npz``): R and N, the anchor's packed features, then each profile array, (R,) or (R, N),
    row-major.

    Args:
        profiles: The profiles.

    Returns:
        The vector.
    """
    anchor = pack_features(profiles.anchor)
    renditions, frames = profiles.f0.shape
    parts = [np.array([renditions, frames, *anchor.shape], dtype=np.float64), anchor.ravel()]
    parts += [np.asarray(getattr(profiles, name), dtype=np.float64).ravel()
              for name in PROFILE_ARRAYS]
    return np.concatenate(parts)


def unpack_profiles(a: np.ndarray) -> SentenceProfiles:
    """The profiles ``pack_profiles`` packed into ``a``.

    Args:
        a: The vector read from a profile file.

    Returns:
        The profiles.

    Raises:
        ValueError: ``a`` is not a profile file's vector, or is cut short or too long.
    """
    if a.ndim != 1 or a.dtype != np.float64 or a.size < 4:
        raise ValueError("not a profile file")
    renditions, frames, anchor_rows, anchor_columns = (int(x) for x in a[:4])
    at = 4 + anchor_rows * anchor_columns
    anchor = unpack_features(a[4:at].reshape(anchor_rows, anchor_columns))
    out, pos = {}, at
    for name in PROFILE_ARRAYS:
        shape = (renditions,) if name in ("length", "level", "power") else (renditions, frames)
        size = int(np.prod(shape))
        if pos + size > a.size:
            raise ValueError("profile file cut short")
        out[name] = a[pos:pos + size].reshape(shape).copy()
        pos += size
    if pos != a.size:
        raise ValueError("profile file of the wrong size")
    return SentenceProfiles(anchor=anchor, **out)


def pack_spread(spread: ReferenceSpread) -> np.ndarray:
    """A reference spread as one float64 vector: the boundary vote, then each term's scale.

    Args:
        spread: The spread.

    Returns:
        The vector, (1 + len(TERMS),).
    """
    return np.array([float(spread.boundary_votes), *(spread.scale[t] for t in TERMS)])


def unpack_spread(a: np.ndarray) -> ReferenceSpread:
    """The spread ``pack_spread`` packed into ``a``.

    Args:
        a: The vector read from a spread file.

    Returns:
        The spread.

    Raises:
        ValueError: ``a`` is not a spread file's vector.
    """
    if a.shape != (1 + len(TERMS),) or a.dtype != np.float64 or a[0] not in (0.0, 1.0):
        raise ValueError("not a reference spread")
    return ReferenceSpread({t: float(v) for t, v in zip(TERMS, a[1:])}, bool(a[0]))


@lru_cache(maxsize=1)
def source_digest() -> str | None:
    """A digest of the prosody package's source, part of every cached profile's key: a change
    to how profiles or spreads are built never reads stale ones.

    Returns:
        The first 16 hex digits of the sha256 of every module of the package, in name order;
        None where the source cannot be read (as in a zipped install: then profiles are not
        cached on disk).
    """
    digest = hashlib.sha256()
    try:
        for module in sorted(Path(__file__).parent.glob("*.py")):
            digest.update(module.name.encode())
            digest.update(module.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()[:16]
