"""The VStyle benchmark's records (Zhan et al., 2025; Hugging Face dataset ``zhanjun/VStyle``).

Each language folder (``en/``, ``zh/``) holds ``metadata.jsonl`` (or, in the published examples,
``metadata_sample.jsonl``) and the audio. One line per spoken instruction: ``instruct_text``,
``ability`` ("category/subcategory"), ``instruct_id``, ``instruct_audio_path`` and, in judged
samples, ``responses[]`` with each system's audio, transcript and the judge's verdict and score
(``gemini_score`` is sometimes a string).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

METADATA_NAMES = ("metadata.jsonl", "metadata_sample.jsonl")


class VStyleError(ValueError):
    pass


@dataclass(frozen=True)
class Response:
    model_name: str
    audio_path: str
    text: str = ""
    judge_raw: str = ""
    judge_score: int | None = None


@dataclass(frozen=True)
class Record:
    record_id: str  # "<category>-<subcategory>-<instruct_id>", the audio file's stem
    instruct_id: str
    text: str
    ability: str  # "category/subcategory"
    audio_path: str
    responses: tuple[Response, ...] = field(default_factory=tuple)

    @property
    def category(self) -> str:
        return self.ability.split("/")[0]

    @property
    def subcategory(self) -> str:
        return self.ability.split("/", 1)[1] if "/" in self.ability else ""


def _score(value) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(str(value).strip().strip("'\""))
    except ValueError:
        return None


def metadata_file(folder: str | Path) -> Path:
    folder = Path(folder)
    for name in METADATA_NAMES:
        if (folder / name).exists():
            return folder / name
    raise VStyleError(f"{folder}: no {' or '.join(METADATA_NAMES)}")


def load_records(folder: str | Path) -> list[Record]:
    """Parse a VStyle language folder; audio paths are resolved (``wav/`` or next to the file)."""
    path = metadata_file(folder)
    root = path.parent
    audio_dir = root / "wav" if (root / "wav").is_dir() else root
    records, problems = [], []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            audio = Path(row["instruct_audio_path"])
            responses = tuple(
                Response(r.get("model_name", ""), str(audio_dir / Path(r["response_audio_path"]).name),
                         r.get("response_text", "") or "", r.get("gemini_raw", "") or "",
                         _score(r.get("gemini_score")))
                for r in row.get("responses", []))
            records.append(Record(audio.stem, str(row["instruct_id"]), row["instruct_text"],
                                  row["ability"], str(audio_dir / audio.name), responses))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path}:{i}: {exc}")
    if problems:
        raise VStyleError("malformed VStyle metadata:\n  " + "\n  ".join(problems[:20]))
    return records
