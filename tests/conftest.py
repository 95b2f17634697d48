"""Shared fixtures: one synthetic ADEPT per test session, built by the tests themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def synthetic_root(tmp_path_factory) -> Path:
    from adept_eval.synthetic import build_corpus

    return build_corpus(tmp_path_factory.mktemp("adept"))


@pytest.fixture(scope="session")
def synthetic_zip(tmp_path_factory, synthetic_root) -> Path:
    from adept_eval.synthetic import zip_corpus

    return zip_corpus(synthetic_root, tmp_path_factory.mktemp("zenodo") / "ADEPT.zip")


@pytest.fixture(scope="session")
def corpus(synthetic_root):
    from adept_eval.corpus import Corpus

    return Corpus(synthetic_root)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Every test gets its own cache and no inherited corpus or Zenodo settings."""
    monkeypatch.setenv("ADEPT_EVAL_HOME", str(tmp_path / "adept_home"))
    for var in ("ADEPT_EVAL_CORPUS", "ADEPT_EVAL_ZENODO_URL"):
        monkeypatch.delenv(var, raising=False)
    yield


def shared_or_skip(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared exists only in the project's own checkouts)")
    return path


os.environ.setdefault("TQDM_DISABLE", "1")
