import numpy as np

from adept_eval.corpora import spec
from adept_eval.corpora.dataset import decode, questions_dataset, recordings_dataset


def test_recordings_dataset(corpus):
    ds = recordings_dataset(corpus)
    assert ds.num_rows == 195
    assert set(ds.column_names) >= {"speaker", "class", "subcategory", "sentence_id", "text",
                                     "audio"}
    assert ds.features["audio"].decode is False
    samples, rate = decode(ds[0]["audio"])
    assert rate == 44100 and samples.dtype == np.float32 and samples.size > rate // 2


def test_question_datasets(corpus):
    dd = {task: questions_dataset(task, corpus) for task in spec.TASKS}
    assert len(dd) == 12
    assert sum(d.num_rows for d in dd.values()) == 165
    ds = questions_dataset("adept_propositional_attitude_male", corpus)
    row = ds[0]
    assert len(row["stimulus_audio"]) == len(row["stimuli"]) == len(row["choices"]) == 4
    assert row["choice_subcategories"][row["answer"]] == row["target"]
    samples, rate = decode(row["stimulus_audio"][0])
    assert samples.ndim == 1 and rate == 44100


def test_decode_from_bytes(corpus):
    ds = recordings_dataset(corpus)
    cell = ds[3]["audio"]
    with open(cell["path"], "rb") as fh:
        from_bytes = decode({"path": None, "bytes": fh.read()})
    from_path = decode(cell)
    assert np.allclose(from_bytes[0], from_path[0]) and from_bytes[1] == from_path[1]
