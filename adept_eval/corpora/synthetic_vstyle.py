"""A synthetic stand-in for VStyle, for trying the VStyle tasks without the Hub.

``build_vstyle(out)`` writes, in VStyle's layout (``corpora.vstyle``):

- ``<out>/<language>/metadata.jsonl``: one line per spoken instruction, ``instruct_id``,
  ``instruct_text``, ``ability`` ("category/subcategory"), ``instruct_audio_path`` (relative to
  the language folder) and ``"synthetic": true``, ``per_subcategory`` instructions in each of
  VStyle's 16 subcategories;
- ``<out>/<language>/wav/<record id>.wav``: each instruction spoken (speech-like signals, as
  the synthetic ADEPT's; the record id is ``<category>-<subcategory>-<instruct_id>``);
- ``<out>/answers/<record id>.wav``: a stand-in system's spoken answer to each, the folder
  ``lm_eval --model audio-dir --model_args path=<out>/answers`` reads.

Every file is deterministic. A judge still has to listen to the answers (any audio LLM behind
an OpenAI-compatible server, e.g. one served on this machine); its scores of these signals mean
nothing about spoken-dialogue models, and every run on them is marked synthetic
(``is_synthetic``).
"""

from __future__ import annotations

import json
from pathlib import Path

from adept_eval.corpora.synthetic import PROFILES, RATE, Prosody, _seed, render
from adept_eval.corpora.vstyle import CATEGORIES, LANGUAGES, METADATA_NAMES
from adept_eval.errors import UserError
from adept_eval.signal.audio import from_array, write_wav

ANSWERS = "answers"
#: the adjective an instruction asks for, per subcategory (English; the sentence varies)
_ASKED = {"age": "an old man's", "speed": "a fast", "gender": "a woman's", "emotion": "a sad",
          "pitch": "a high", "volume": "a quiet", "composite_properties": "a slow, deep",
          "variation": "a rising", "style": "a whispering", "character": "a pirate's",
          "scenario": "a news reader's", "anger": "a calming",
          "sadness_disappointment": "a comforting", "anxiety_fear": "a reassuring",
          "joy_excitement": "a cheerful"}
_SENTENCES = ("The garden path leads down to the old stone bridge.",
              "Children play music outside on every narrow street.",
              "The yellow houses stand quietly along the water.")
#: how the stand-in system answers: a prosody per category, so the answers differ audibly
_ANSWERED = {"acoustic_attributes": PROFILES[("emotion", "sadness")],
             "instruction": PROFILES[("emotion", "joy")],
             "role_play": PROFILES[("interpersonal_attitude", "authoritative")],
             "empathy": PROFILES[("interpersonal_attitude", "polite")]}


def records(per_subcategory: int = 2) -> list[dict]:
    """The synthetic instructions, as ``metadata.jsonl`` lines (without the language).

    Args:
        per_subcategory: instructions in each subcategory.

    Returns:
        One dict per instruction, in VStyle's category order.
    """
    rows, number = [], 0
    for category, subs in CATEGORIES.items():
        for sub in subs:
            for i in range(per_subcategory):
                number += 1
                instruct_id = f"{number:04d}"
                sentence = _SENTENCES[(number + i) % len(_SENTENCES)]
                rows.append({
                    "instruct_id": instruct_id,
                    "instruct_text": f'In {_ASKED.get(sub, "a different")} voice, say: '
                                     f'"{sentence}"',
                    "ability": f"{category}/{sub}",
                    "instruct_audio_path": f"wav/{category}-{sub}-{instruct_id}.wav",
                    "synthetic": True})
    return rows


def is_synthetic(metadata: Path) -> bool:
    """Whether a VStyle metadata file is ``build_vstyle``'s: every line says so.

    Args:
        metadata: the ``metadata.jsonl`` (or sample) file.

    Returns:
        True when every non-empty line is a JSON object with ``"synthetic": true``.
    """
    try:
        lines = [line for line in metadata.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        return bool(lines) and all(json.loads(line).get("synthetic") is True for line in lines)
    except (OSError, ValueError, AttributeError):
        return False


def _check_replaceable(out: Path, language: str) -> None:
    """Refuse to write over anything but nothing, an empty folder or an earlier synthetic
    VStyle (a real copy of VStyle there would be mixed with it).

    Raises:
        UserError: ``out`` holds something else.
    """
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    metadata = [out / language / name for name in METADATA_NAMES
                if (out / language / name).exists()]
    if out.is_dir() and metadata and all(is_synthetic(m) for m in metadata):
        return
    raise UserError(f"{out}: already there and not a synthetic VStyle: make-synthetic "
                    "--vstyle writes only to a new path, an empty folder or an earlier "
                    "synthetic VStyle; name another")


def build_vstyle(out: str | Path, *, language: str = "en", per_subcategory: int = 2,
                 rate: int = RATE) -> Path:
    """Write a synthetic VStyle language folder and a stand-in system's answers.

    Args:
        out: the folder to write (``<out>/<language>/`` and ``<out>/answers/``).
        language: one of VStyle's languages (the texts are English either way).
        per_subcategory: instructions in each of the 16 subcategories.
        rate: the sampling rate of the audio (Hz).

    Returns:
        ``out``.

    Raises:
        UserError: an unknown language, or ``out`` holds something other than an earlier
            synthetic VStyle.
    """
    if language not in LANGUAGES:
        raise UserError(f"VStyle has languages {', '.join(LANGUAGES)}, not {language!r}")
    out = Path(out)
    _check_replaceable(out, language)
    folder, answers = out / language, out / ANSWERS
    (folder / "wav").mkdir(parents=True, exist_ok=True)
    answers.mkdir(parents=True, exist_ok=True)
    rows = records(per_subcategory)
    for row in rows:
        stem = Path(row["instruct_audio_path"]).stem
        spoken = render(row["instruct_text"], "female", Prosody(),
                        seed=_seed("vstyle", stem), rate=rate)
        write_wav(folder / row["instruct_audio_path"], from_array(spoken, rate))
        category = row["ability"].split("/")[0]
        answer = render(row["instruct_text"].split('"')[1], "male", _ANSWERED[category],
                        seed=_seed("answer", stem), rate=rate)
        write_wav(answers / f"{stem}.wav", from_array(answer, rate))
    (folder / "metadata.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return out
