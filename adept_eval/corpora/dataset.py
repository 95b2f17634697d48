"""The corpus and its question sets as ``datasets.Dataset`` objects.

Audio columns are ``Audio(decode=False)``: rows carry the file path (and, once published to the
Hub, the bytes); ``decode`` turns a cell into samples with soundfile, so neither torch nor
torchcodec nor FFmpeg is needed.
"""

from __future__ import annotations

from dataclasses import asdict

import datasets
import numpy as np
import pyarrow as pa

from adept_eval.signal.audio import read_audio, read_audio_bytes
from adept_eval.corpora.corpus import Corpus, load_corpus
from adept_eval.corpora.questions import build_questions

RECORDING_FEATURES = datasets.Features({
    "stimulus_id": datasets.Value("string"),
    "speaker": datasets.Value("string"),
    "speaker_id": datasets.Value("string"),
    "class": datasets.Value("string"),
    "subcategory": datasets.Value("string"),
    "sentence_id": datasets.Value("string"),
    "text": datasets.Value("string"),
    "audio": datasets.Audio(decode=False),
})

QUESTION_FEATURES = datasets.Features({
    "question_id": datasets.Value("string"),
    "task": datasets.Value("string"),
    "class": datasets.Value("string"),
    "speaker": datasets.Value("string"),
    "design": datasets.Value("string"),
    "sentence_id": datasets.Value("string"),
    "text": datasets.Value("string"),
    "question": datasets.Value("string"),
    "stimuli": datasets.Sequence(datasets.Value("string")),
    "stimulus_subcategories": datasets.Sequence(datasets.Value("string")),
    "stimulus_audio": datasets.Sequence(datasets.Audio(decode=False)),
    "choices": datasets.Sequence(datasets.Value("string")),
    "choice_subcategories": datasets.Sequence(datasets.Value("string")),
    "answer": datasets.Value("int32"),
    "target": datasets.Value("string"),
})


def _dataset(rows: list[dict], features: datasets.Features) -> datasets.Dataset:
    """Build from an Arrow table: datasets>=4 routes ``from_list`` with Audio features through
    torchcodec's encoder even for plain paths, which we neither need nor want to require."""
    table = pa.Table.from_pylist(rows, schema=features.arrow_schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features))


def recordings_dataset(corpus: Corpus | None = None) -> datasets.Dataset:
    """The 195 natural recordings, one row each.

    Args:
        corpus: The corpus, or None to ``load_corpus``.

    Returns:
        The dataset (``RECORDING_FEATURES``).
    """
    corpus = corpus or load_corpus()
    rows = [{
        "stimulus_id": r.stimulus_id, "speaker": r.speaker, "speaker_id": r.speaker_id,
        "class": r.cls, "subcategory": r.subcategory, "sentence_id": r.sentence_id,
        "text": r.text, "audio": {"path": r.audio_path, "bytes": None},
    } for r in corpus.recordings]
    return _dataset(rows, RECORDING_FEATURES)


def questions_dataset(task: str, corpus: Corpus | None = None) -> datasets.Dataset:
    """One task's listening-test questions, with the natural recordings as stimulus audio.

    Args:
        task: The task's name, e.g. "adept_emotion_female".
        corpus: The corpus, or None to ``load_corpus``.

    Returns:
        The dataset (``QUESTION_FEATURES``).
    """
    corpus = corpus or load_corpus()
    rows = []
    for q in build_questions(corpus, task):
        row = asdict(q)
        row["class"] = row.pop("cls")
        row["stimulus_audio"] = [{"path": corpus.get(s).audio_path, "bytes": None}
                                 for s in q.stimuli]
        rows.append(row)
    return _dataset(rows, QUESTION_FEATURES)


def decode(cell: dict) -> tuple[np.ndarray, int]:
    """Decode an undecoded Audio cell.

    Args:
        cell: {"path", "bytes"}: the bytes when there are any, else the file.

    Returns:
        (mono float32 samples, rate).

    Raises:
        AudioError: The audio cannot be decoded.
    """
    if cell.get("bytes"):
        audio = read_audio_bytes(cell["bytes"], str(cell.get("path") or "audio cell"))
    else:
        audio = read_audio(cell["path"])
    return audio.samples, audio.rate
