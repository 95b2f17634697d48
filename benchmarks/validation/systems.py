"""ADEPT-layout corpora and simulated systems spoken by real TTS engines, cached on disk.

For one engine, ``render_engine`` writes (once; later calls reuse the files):

- ``<cache>/<engine>/ADEPT``: a complete ADEPT-layout corpus (``wav_44khz``, ``txt``,
  ``adept_prompts.json``) with every subcategory's plan realised by the engine. Used as the
  *reference* corpus of a rotation, and its ``wav_44khz`` folder as the *copy* system of
  another rotation (the same prosodic plans realised by this engine);
- ``<cache>/<engine>/flat``: every stimulus spoken from plain text (no prosody asked);
- ``<cache>/<engine>/partial``: a deterministic half of the stimuli copied, the rest flat;
- ``<cache>/<engine>/swap``: anger<->sadness, beginning<->end, interpretation 1<->2 exchanged.

``nonspeech_systems`` derives signals that are not speech from a reference corpus: a tone as
long as each reference, a DC offset, noise carrying the reference's energy envelope, silence.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import soundfile as sf
from tqdm.auto import tqdm

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import PROMPTS_FILE, TXT_DIR, WAV_DIR, expected_stimuli
from benchmarks.validation import sentences as S
from benchmarks.validation.engines import ENGINES

# per engine: bump one when the sentences or plans change (all) or its own settings change;
# a voice set's with any of its parts' (awb and flite-kal speak the female with espeak-ng)
RENDER_VERSIONS = {"espeak": "3", "festival": "4", "flite": "3", "festival-ked": "3", "awb": "3",
                   "flite-kal": "3", "pico": "2", "rhvoice": "4"}
SWAPS = {"anger": "sadness", "sadness": "anger", "beginning": "end", "end": "beginning",
         "interpretation_1": "interpretation_2", "interpretation_2": "interpretation_1"}
SYSTEMS = ("copy", "partial", "flat", "swap")
NONSPEECH = ("tone", "dc", "noise", "silence")
ALL_SYSTEMS = ("adept-natural", *SYSTEMS, *NONSPEECH)


def default_cache() -> Path:
    from adept_eval.paths import cache_home

    return cache_home() / "validation"


def _in_half(stimulus_id: str) -> bool:
    return hashlib.sha256(f"partial|{stimulus_id}".encode()).digest()[0] < 128


def stimuli(sentence_ids: int = 5) -> list[tuple[str, str, str, str]]:
    """(speaker, class, subcategory, sentence_id), optionally the first N sentences per class."""
    return [(sp, c, sub, sid) for sp, c, sub, sid in expected_stimuli()
            if int(sid) - spec.CLASSES[c].id_block < sentence_ids]


def render_engine(engine: str, cache: Path | None = None, *, progress: bool = True) -> Path:
    """Render (or reuse) the corpus and systems of one engine; returns ``<cache>/<engine>``."""
    base = Path(cache or default_cache()) / f"{engine}-v{RENDER_VERSIONS[engine]}"
    done = base / ".complete"
    if done.exists():
        return base
    eng = ENGINES[engine]
    if not eng.available():
        raise RuntimeError(f"TTS engine {engine!r} is not installed")
    if base.exists():
        shutil.rmtree(base)
    root = base / "ADEPT"
    items = stimuli()
    prompts: dict[str, dict[str, dict[str, str]]] = {}
    bar = tqdm(total=len(items) + 60, desc=f"rendering {engine}", unit="utt", disable=not progress)
    for speaker in spec.SPEAKERS:
        mine = [it for it in items if it[0] == speaker]
        # full renditions (the corpus / copy system)
        jobs = [(S.sentence(c, sid), S.plan(c, sub, sid),
                 f"{c}/{sub}/{spec.SPEAKERS[speaker]}_{sid}") for _, c, sub, sid in mine]
        for start in range(0, len(jobs), 20):
            batch = jobs[start:start + 20]
            for (sent, _, rel), (x, rate) in zip(batch, eng.render_many(batch, speaker)):
                wav = root / WAV_DIR / f"{rel}.wav"
                wav.parent.mkdir(parents=True, exist_ok=True)
                sf.write(str(wav), x, rate, subtype="PCM_16")
                txt = root / TXT_DIR / f"{rel}.txt"
                txt.parent.mkdir(parents=True, exist_ok=True)
                txt.write_text(sent.text + "\n", encoding="utf-8")
            bar.update(len(batch))
        # plain renditions, one per sentence
        sentences = sorted({(c, sid) for _, c, _, sid in mine})
        plain = eng.render_many([(S.sentence(c, sid), S.NEUTRAL_PLAN, "") for c, sid in sentences],
                                speaker)
        bar.update(len(sentences))
        plain_by = dict(zip(sentences, plain))
        for _, c, sub, sid in mine:
            key = f"{spec.SPEAKERS[speaker]}_{sid}"
            rel = f"{c}/{sub}/{key}"
            x, rate = plain_by[(c, sid)]
            _write(base / "flat" / f"{rel}.wav", x, rate)
            if spec.CLASSES[c].design == "single":
                prompts.setdefault(c, {})[key] = S.answer_options(c, sid)
    bar.close()
    (root / PROMPTS_FILE).write_text(json.dumps(prompts, indent=2), encoding="utf-8")
    for speaker, c, sub, sid in stimuli():
        key = f"{spec.SPEAKERS[speaker]}_{sid}"
        rel = f"{c}/{sub}/{key}"
        src = root / WAV_DIR / f"{rel}.wav"
        shutil.copy(src if _in_half(rel) else base / "flat" / f"{rel}.wav",
                    _mkdir(base / "partial" / f"{rel}.wav"))
        swapped = SWAPS.get(sub, sub)
        shutil.copy(root / WAV_DIR / f"{c}/{swapped}/{key}.wav",
                    _mkdir(base / "swap" / f"{rel}.wav"))
    done.touch()
    return base


def _mkdir(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write(path: Path, x: np.ndarray, rate: int) -> None:
    sf.write(str(_mkdir(path)), x, rate, subtype="PCM_16")


def system_folder(engine_dir: Path, system: str) -> Path:
    return engine_dir / "ADEPT" / WAV_DIR if system == "copy" else engine_dir / system


def nonspeech_systems(engine_dir: Path) -> dict[str, Path]:
    """Tone, DC, envelope-shaped noise and silence, one per reference recording (cached)."""
    out = {name: engine_dir / f"nonspeech-{name}" for name in NONSPEECH}
    done = engine_dir / ".nonspeech-complete"
    if done.exists():
        return out
    wav_root = engine_dir / "ADEPT" / WAV_DIR
    for ref in sorted(wav_root.rglob("*.wav")):
        rel = ref.relative_to(wav_root)
        x, rate = sf.read(str(ref), dtype="float64")
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(str(rel).encode()).digest()[:4],
                                                   "big"))
        t = np.arange(len(x)) / rate
        hop = max(int(0.01 * rate), 1)
        frames = np.sqrt(np.convolve(x ** 2, np.ones(hop) / hop, mode="same"))
        signals = {
            "tone": 0.2 * np.sin(2 * np.pi * 220.0 * t),
            "dc": np.full(len(x), 0.25),
            "noise": np.clip(rng.normal(0, 1, len(x)) * frames, -1, 1),
            "silence": np.zeros(len(x)),
        }
        for name, y in signals.items():
            _write(out[name] / rel, y.astype(np.float32), rate)
    done.touch()
    return out
