"""The VStyle benchmark's records (Zhan et al., 2025; Hugging Face dataset ``zhanjun/VStyle``).

Each language folder (``en/``, ``zh/``) holds ``metadata.jsonl`` (or, in the published examples,
``metadata_sample.jsonl``) and the audio. One line per spoken instruction: ``instruct_text``,
``ability`` ("category/subcategory"), ``instruct_id``, ``instruct_audio_path`` and, in judged
samples, ``responses[]`` with each system's audio, transcript and the judge's verdict and score
(``gemini_score`` is sometimes a string).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from adept_eval.errors import VStyleError

#: the metadata of VStyle's published examples (the project page's 33 instructions per language,
#: 7 systems each): a sample for trying the pipeline, whose scores are not VStyle results
SAMPLE_METADATA = "metadata_sample.jsonl"
METADATA_NAMES = ("metadata.jsonl", SAMPLE_METADATA)
HUB_REPO = "zhanjun/VStyle"
LANGUAGES = ("en", "zh")

# VStyle's categories and subcategories (its evaluation script's SUB_CATS), in its order.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "acoustic_attributes": ("age", "speed", "gender", "emotion", "pitch", "volume",
                            "composite_properties"),
    "instruction": ("emotion", "variation", "style"),
    "role_play": ("character", "scenario"),
    "empathy": ("anger", "sadness_disappointment", "anxiety_fear", "joy_excitement"),
}
# spellings met in the published files -> the names above
_CATEGORY_ALIASES = {"acoustic_properties": "acoustic_attributes", "role_playing": "role_play"}
_SUBCATEGORY_ALIASES = {("instruction", "switch"): "variation"}


def normalise_ability(ability: str) -> tuple[str, str]:
    """A record's ability as (category, subcategory) in ``CATEGORIES``' spelling.

    Args:
        ability: "category/subcategory" as the metadata writes it, e.g. "Role-Playing/character".

    Returns:
        The pair, e.g. ("role_play", "character").
    """
    cat, _, sub = str(ability).partition("/")
    cat = cat.strip().lower().replace("-", "_").replace(" ", "_")
    cat = _CATEGORY_ALIASES.get(cat, cat)
    sub = sub.strip().lower().replace("-", "_").replace(" ", "_")
    return cat, _SUBCATEGORY_ALIASES.get((cat, sub), sub)


def subcategory_weights() -> dict[tuple[str, str], float]:
    """VStyle's overall-score weights: each category 0.25; inside acoustic attributes,
    composite_properties takes half of the category and the six others share the other half;
    inside the other categories the subcategories share equally.

    Returns:
        (category, subcategory) -> weight; the weights sum to 1.
    """
    weights = {}
    for cat, subs in CATEGORIES.items():
        for sub in subs:
            if cat == "acoustic_attributes":
                weights[(cat, sub)] = 0.125 if sub == "composite_properties" else 0.125 / 6
            else:
                weights[(cat, sub)] = 0.25 / len(subs)
    return weights


@dataclass(frozen=True)
class Response:
    """One model's published response to a VStyle instruction, with the Gemini judgement
    published beside it."""

    model_name: str
    audio_path: str
    text: str = ""
    judge_raw: str = ""
    judge_score: int | None = None


@dataclass(frozen=True)
class Record:
    """One VStyle instruction: its text, its spoken audio, its ability and the published
    responses to it."""

    record_id: str  # "<category>-<subcategory>-<instruct_id>", the audio file's stem
    instruct_id: str
    text: str
    ability: str  # "category/subcategory"
    audio_path: str
    responses: tuple[Response, ...] = field(default_factory=tuple)

    @property
    def category(self) -> str:
        """The ability's category, normalised (``normalise_ability``)."""
        return normalise_ability(self.ability)[0]

    @property
    def subcategory(self) -> str:
        """The ability's subcategory, normalised (``normalise_ability``)."""
        return normalise_ability(self.ability)[1]


def _score(value) -> int | None:
    """A published judge score as an integer, or None when it is missing or not a number."""
    if value is None or value == "":
        return None
    try:
        return int(str(value).strip().strip("'\""))
    except ValueError:
        return None


def metadata_file(folder: str | Path) -> Path:
    """The metadata file of a VStyle language folder.

    Args:
        folder: The language folder.

    Returns:
        The first of ``METADATA_NAMES`` it holds.

    Raises:
        VStyleError: It holds none.
    """
    folder = Path(folder)
    for name in METADATA_NAMES:
        if (folder / name).exists():
            return folder / name
    raise VStyleError(f"{folder}: no {' or '.join(METADATA_NAMES)}")


def _resolve(root: Path, relative: str) -> Path:
    """An audio path as written in the metadata, relative to the folder, else in ``wav/``."""
    rel = Path(relative)
    for candidate in (root / rel, root / "wav" / rel.name, root / rel.name):
        if candidate.exists():
            return candidate
    return root / rel


def load_records(folder: str | Path) -> list[Record]:
    """Parse a VStyle language folder, resolving audio paths.

    Args:
        folder: The language folder.

    Returns:
        Its records, in the metadata's order.

    Raises:
        VStyleError: The folder has no metadata, or lines of it are malformed (the first 20
            are listed).
    """
    path = metadata_file(folder)
    root = path.parent
    records, problems = [], []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            audio = Path(row["instruct_audio_path"])
            responses = tuple(
                Response(response.get("model_name", ""),
                         str(_resolve(root, response["response_audio_path"])),
                         response.get("response_text", "") or "",
                         response.get("gemini_raw", "") or "",
                         _score(response.get("gemini_score")))
                for response in row.get("responses", []))
            records.append(Record(audio.stem, str(row["instruct_id"]), row["instruct_text"],
                                  row["ability"], str(_resolve(root, str(audio))), responses))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path}:{i}: {exc}")
    if problems:
        raise VStyleError("malformed VStyle metadata:\n  " + "\n  ".join(problems[:20]))
    return records


def locate(language: str = "en", folder: str | Path | None = None) -> Path:
    """The folder of one language: ``folder`` or ``$VSTYLE_DIR`` (local copies: either the
    language folder itself or its parent), else a download from the Hub dataset
    ``zhanjun/VStyle`` into the Hugging Face cache (only that language's files).

    Args:
        language: One of ``LANGUAGES``.
        folder: A local copy, or None for ``$VSTYLE_DIR`` or the Hub.

    Returns:
        The language folder.

    Raises:
        VStyleError: The language is unknown, the local copy has no metadata for it, or the
            Hub's copy cannot be fetched or lacks it.
    """
    if language not in LANGUAGES:
        raise VStyleError(f"VStyle has languages {', '.join(LANGUAGES)}, not {language!r}")
    local = folder or os.environ.get("VSTYLE_DIR")
    if local:
        return _local_folder(Path(local).expanduser(), language,
                             "vstyle_dir" if folder else "VSTYLE_DIR")
    return _hub_folder(language)


def _has_metadata(candidate: Path) -> bool:
    """Whether ``candidate`` holds a VStyle metadata file."""
    return any((candidate / n).exists() for n in METADATA_NAMES)


def _local_folder(local: Path, language: str, where: str) -> Path:
    """The language folder of a local copy: ``local`` itself or its ``language`` folder.

    Args:
        local: The local copy.
        language: The language.
        where: The option that named ``local`` (``vstyle_dir``, ``VSTYLE_DIR``), for messages.

    Raises:
        VStyleError: ``local`` does not exist, or has no metadata for the language.
    """
    for candidate in (local / language, local):
        if _has_metadata(candidate):
            return candidate
    if not local.exists():
        raise VStyleError(f"{where}={local}: no such folder")
    raise VStyleError(f"{where}={local}: no VStyle metadata for {language!r} (looked for "
                      f"{' or '.join(METADATA_NAMES)} in it and in {local / language})")


def _hub_folder(language: str) -> Path:
    """The language folder of the Hub's copy, downloaded into the Hugging Face cache (only
    that language's files).

    Raises:
        VStyleError: The Hub's copy cannot be fetched, or has no metadata for the language.
    """
    from huggingface_hub import snapshot_download

    try:
        root = snapshot_download(HUB_REPO, repo_type="dataset",
                                 allow_patterns=[f"{language}/*", f"{language}/**"])
    except Exception as exc:  # no network, offline mode, the Hub refusing: one message
        why = " ".join(str(exc).split())[:300]
        raise VStyleError(
            f"the VStyle dataset ({HUB_REPO}, {language}) could not be fetched from the Hugging "
            f"Face Hub ({type(exc).__name__}{': ' + why if why else ''}); give a local copy "
            "with --metadata vstyle_dir=FOLDER or VSTYLE_DIR=FOLDER") from None
    folder = Path(root) / language
    if not _has_metadata(folder):
        raise VStyleError(f"the VStyle dataset ({HUB_REPO}) fetched into {root} has no "
                          f"{' or '.join(METADATA_NAMES)} for {language!r}; give a local copy "
                          "with --metadata vstyle_dir=FOLDER or VSTYLE_DIR=FOLDER")
    return folder
