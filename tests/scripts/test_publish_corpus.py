"""The corpus-publishing script builds a parquet dataset that `datasets` loads with its audio."""

import importlib.util
import io
import json
from pathlib import Path

import datasets
import pytest
import soundfile as sf

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "publish_corpus.py"


@pytest.fixture(scope="module")
def publish():
    spec = importlib.util.spec_from_file_location("publish_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_build_local_dataset(publish, corpus, tmp_path):
    configs = publish.build(corpus, tmp_path, "cc-by-4.0")
    assert configs["recordings"] == 195 and len(configs) == 13
    assert sum(v for k, v in configs.items() if k != "recordings") == 165
    card = (tmp_path / "README.md").read_text()
    assert "license: cc-by-4.0" in card and "Torresquintero" in card
    assert "config_name: adept_marked_tonicity_male" in card
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "recordings" / "*.parquet"),
                               split="train")
    ds = ds.cast_column("audio", datasets.Audio(decode=False))
    cell = ds[0]["audio"]
    samples, rate = sf.read(io.BytesIO(cell["bytes"]))
    assert rate == 44100 and len(samples) > 1000
    q = datasets.load_dataset("parquet", split="train", data_files=str(
        tmp_path / "adept_emotion_female" / "*.parquet"))
    assert q.num_rows == 20 and len(q[0]["stimulus_audio"]) == 5


def test_licence_comes_from_the_zenodo_record(publish, corpus, synthetic_root, tmp_path):
    with pytest.raises(SystemExit, match="--license"):
        publish.licence_of(corpus, None)
    assert publish.licence_of(corpus, "cc-by-4.0") == "cc-by-4.0"
    import shutil

    from adept_eval.corpora.corpus import Corpus

    root = tmp_path / "c"
    shutil.copytree(synthetic_root, root)
    (root / "zenodo_record.json").write_text(json.dumps({"metadata": {"license": {"id": "CC-BY-4.0"}}}))
    assert publish.licence_of(Corpus(root), None) == "cc-by-4.0"
