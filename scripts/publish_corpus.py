"""Publish ADEPT to the Hugging Face Hub as a parquet dataset with embedded audio.

One config per listening test (``adept_emotion_female``, ...) whose rows are the questions with
their stimulus audio, plus a ``recordings`` config with the 195 natural recordings. The dataset
card carries the citation and the licence the Zenodo record states (read from the record saved
at download time; pass --license only for a corpus obtained another way).

    python scripts/publish_corpus.py --repo-id my-org/ADEPT            # build and push
    python scripts/publish_corpus.py --local-dir out/adept_hub         # build only

The token comes from HF_TOKEN (or `hf auth login`); it is never written anywhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adept_eval import __version__
from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus, load_corpus
from adept_eval.errors import run_script
from adept_eval.corpora.dataset import (
    QUESTION_FEATURES,
    RECORDING_FEATURES,
    questions_dataset,
    recordings_dataset,
)


def _embed(cell: dict) -> dict:
    path = Path(cell["path"])
    return {"bytes": path.read_bytes(), "path": path.name}


def _write(ds, features, out: Path) -> int:
    rows = ds.to_list()
    for row in rows:
        if "audio" in row:
            row["audio"] = _embed(row["audio"])
        if "stimulus_audio" in row:
            row["stimulus_audio"] = [_embed(c) for c in row["stimulus_audio"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=features.arrow_schema), out)
    return len(rows)


def licence_of(corpus: Corpus, override: str | None) -> str:
    if override:
        return override
    record = corpus.zenodo_record or {}
    lic = (record.get("metadata") or {}).get("license") or {}
    if isinstance(lic, dict) and lic.get("id"):
        return str(lic["id"]).lower()
    raise SystemExit("The corpus has no saved Zenodo record to read its licence from; pass "
                     "--license with the licence Zenodo record 5117102 states.")


def card(configs: dict[str, int], licence: str, fingerprint: str) -> str:
    lines = ["---", f"license: {licence}", "language:", "- en", "task_categories:",
             "- text-to-speech", "pretty_name: ADEPT (A Dataset for Evaluating Prosody Transfer)",
             "configs:"]
    for name in configs:
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test",
                  f"    path: {name}/test-00000-of-00001.parquet"]
    tests = [name for name in configs if name != "recordings"]
    questions = sum(configs[name] for name in tests)
    lines += ["---", "", "# ADEPT: A Dataset for Evaluating Prosody Transfer", "",
              f"{configs.get('recordings', 0)} natural English recordings ({len(spec.SPEAKERS)} "
              f"speakers, {len(spec.CLASSES)} prosodic classes) and the {len(tests)} "
              f"forced-choice listening tests built from them ({questions} questions), as "
              "described in the ADEPT "
              "evaluation tutorial. Published with "
              f"[adept-eval](https://pypi.org/project/adept-eval/) {__version__} from Zenodo "
              f"record {spec.ZENODO_RECORD_ID} (doi:{spec.ZENODO_DOI}); corpus sha256 "
              f"`{fingerprint}`.", "", "| config | rows |", "|---|---|"]
    lines += [f"| {name} | {n} |" for name, n in configs.items()]
    lines += ["", "Audio is embedded as WAV bytes; decode it with `soundfile` (no torch needed):",
              "", "```python", "import io, soundfile as sf, datasets",
              "ds = datasets.load_dataset('<repo>', 'recordings', split='test')",
              "ds = ds.cast_column('audio', datasets.Audio(decode=False))",
              "samples, rate = sf.read(io.BytesIO(ds[0]['audio']['bytes']))", "```", "",
              f"Licence: {licence} (as stated by the Zenodo record).", "", "## Citation", "",
              "```bibtex", spec.CITATION, "```", ""]
    return "\n".join(lines)


def build(corpus: Corpus, out: Path, licence: str) -> dict[str, int]:
    configs = {"recordings": _write(recordings_dataset(corpus), RECORDING_FEATURES,
                                    out / "recordings" / "test-00000-of-00001.parquet")}
    for name in spec.TASKS:
        configs[name] = _write(questions_dataset(name, corpus), QUESTION_FEATURES,
                               out / name / "test-00000-of-00001.parquet")
    (out / "README.md").write_text(card(configs, licence, corpus.fingerprint), encoding="utf-8")
    return configs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="ADEPT.zip or folder (default: as adept-eval finds it)")
    parser.add_argument("--repo-id", help="dataset repo to push to, e.g. my-org/ADEPT")
    parser.add_argument("--local-dir", default="adept_hub_dataset", help="where to build")
    parser.add_argument("--license", help="licence id, when no Zenodo record was saved")
    parser.add_argument("--private", action="store_true")
    args = parser.parse_args(argv)
    corpus = load_corpus(args.corpus)
    out = Path(args.local_dir)
    configs = build(corpus, out, licence_of(corpus, args.license))
    print(f"built {sum(configs.values())} rows in {len(configs)} configs at {out}")
    if args.repo_id:
        from huggingface_hub import HfApi

        api = HfApi()
        api.create_repo(args.repo_id, repo_type="dataset", private=args.private, exist_ok=True)
        info = api.upload_folder(repo_id=args.repo_id, repo_type="dataset", folder_path=out,
                                 commit_message=f"ADEPT via adept-eval {__version__}")
        print(f"pushed to {info}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
