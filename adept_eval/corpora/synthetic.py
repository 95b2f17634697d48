"""A deterministic synthetic ADEPT: speech-like audio in the exact ADEPT layout.

For tests, benchmarks and trying the pipeline offline; never a substitute for the real corpus.
Each utterance is a harmonic source (F0 contour integrated to phase) shaped by per-syllable
formant envelopes, so it has a pitch track, syllabic energy and a spectrum that DTW can align.
Subcategories differ the way the ADEPT classes do: emotions and attitudes globally (F0 level and
range, energy, rate, final rise or fall, spectral tilt), emphasis and tonicity locally (a pitch
accent at the beginning, middle or end), syntactic phrasing by where the pause falls.

``render`` is public so tests can build "systems" that copy, flatten or swap prosody.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import soundfile as sf

from adept_eval.corpora import spec
from adept_eval.corpora.corpus import PROMPTS_FILE, TXT_DIR, WAV_DIR, expected_stimuli

RATE = 44100
SPEAKER_F0 = {"female": 210.0, "male": 115.0}
SYLLABLE_S = 0.2


@dataclass(frozen=True)
class Prosody:
    """Prosodic settings of one rendition; neutral is the default."""

    f0_shift: float = 0.0  # semitones relative to the speaker's base
    f0_range: float = 1.0  # scales every intonational excursion
    gain_db: float = 0.0
    rate: float = 1.0  # syllables per second relative to neutral
    final: float = -2.0  # semitones of final rise (+) or fall (-) over the last syllables
    accent_pos: float | None = None  # 0..1: where a pitch accent falls
    accent_size: float = 0.0  # semitones
    pause_pos: float | None = None  # 0..1: where a phrase break falls
    pause_s: float = 0.0
    jitter: float = 0.0  # semitones of fast F0 tremble
    tilt: float = 1.0  # harmonic roll-off exponent: lower is brighter

    def towards_neutral(self, amount: float) -> "Prosody":
        """Blend with neutral prosody (positions are kept).

        Args:
            amount: 0 keeps this prosody, 1 is neutral.

        Returns:
            The blend.
        """
        neutral, kept = Prosody(), 1.0 - amount
        return replace(
            self,
            f0_shift=self.f0_shift * kept,
            f0_range=neutral.f0_range + (self.f0_range - 1) * kept,
            gain_db=self.gain_db * kept, rate=1 + (self.rate - 1) * kept,
            final=neutral.final + (self.final - neutral.final) * kept,
            accent_size=self.accent_size * kept, pause_s=self.pause_s * kept,
            jitter=self.jitter * kept, tilt=1 + (self.tilt - 1) * kept)


PROFILES: dict[tuple[str, str], Prosody] = {
    ("emotion", "neutral"): Prosody(),
    ("emotion", "anger"): Prosody(2.0, 1.3, 6.0, 1.1, -4.0, tilt=0.6),
    ("emotion", "fear"): Prosody(5.0, 0.6, -2.0, 1.3, 1.0, jitter=0.8),
    ("emotion", "joy"): Prosody(4.0, 1.9, 3.0, 1.05, 2.0, tilt=0.85),
    ("emotion", "sadness"): Prosody(-2.5, 0.35, -7.0, 0.72, -1.0, tilt=1.6),
    ("interpersonal_attitude", "neutral"): Prosody(),
    ("interpersonal_attitude", "authoritative"): Prosody(-1.5, 0.9, 4.0, 0.88, -5.0, tilt=0.8),
    ("interpersonal_attitude", "contemptuous"): Prosody(-1.0, 1.5, 0.0, 0.8, 5.0, tilt=1.3),
    ("interpersonal_attitude", "polite"): Prosody(3.0, 1.3, -2.0, 0.97, 2.5),
    ("propositional_attitude", "neutral"): Prosody(),
    ("propositional_attitude", "incredulity"): Prosody(2.0, 1.5, 1.0, 0.9, 8.0),
    ("propositional_attitude", "surprise"): Prosody(5.0, 2.0, 4.0, 1.05, 1.0, 0.15, 4.0),
    ("propositional_attitude", "sarcasm"): Prosody(-1.0, 1.6, 0.0, 0.7, -3.0, 0.5, 3.0),
    ("topical_emphasis", "beginning"): Prosody(accent_pos=0.12, accent_size=6.0),
    ("topical_emphasis", "middle"): Prosody(accent_pos=0.5, accent_size=6.0),
    ("topical_emphasis", "end"): Prosody(accent_pos=0.85, accent_size=6.0),
    ("syntactic_phrasing", "interpretation_1"): Prosody(pause_pos=0.3, pause_s=0.3),
    ("syntactic_phrasing", "interpretation_2"): Prosody(pause_pos=0.68, pause_s=0.3),
    ("marked_tonicity", "interpretation_1"): Prosody(accent_pos=0.25, accent_size=6.0),
    ("marked_tonicity", "interpretation_2"): Prosody(accent_pos=0.75, accent_size=6.0),
}

_WORDS = ("the garden path leads down to an old stone bridge near water quietly painted "
          "yellow houses stand along every narrow street while children play music "
          "outside").split()
_SUBJECTS = ("Vegans", "Sailors", "Doctors", "Poets", "Farmers")
_VERBS = ("eat", "carry", "paint", "sell", "find")
_OBJECTS = ("avocado", "lanterns", "portraits", "apples", "shells")
_PLACES = ("with toast", "at night", "in spring", "on Mondays", "by the sea")


def _seed(*parts: str) -> int:
    """A 64-bit seed from the sha256 of ``parts``: the same every run and machine."""
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def sentence(cls: str, sentence_id: str) -> str:
    """The synthetic corpus's text of one sentence.

    Args:
        cls: The class.
        sentence_id: The sentence's id, e.g. "0100".

    Returns:
        The text (subject, verb, object and place for topical emphasis; random words else).
    """
    i = int(sentence_id) % 100
    if cls == "topical_emphasis":
        return f"{_SUBJECTS[i]} {_VERBS[i]} {_OBJECTS[i]} {_PLACES[i]}."
    rng = np.random.default_rng(_seed(cls, sentence_id))
    words = rng.choice(_WORDS, size=6 + i % 3, replace=False)
    return (" ".join(words)).capitalize() + "."


def answer_options(cls: str, sentence_id: str) -> dict[str, str]:
    """The synthetic corpus's adept_prompts.json options of a single-stimulus sentence.

    Args:
        cls: The class.
        sentence_id: The sentence's id.

    Returns:
        Subcategory -> option text.
    """
    i = int(sentence_id) % 100
    if cls == "topical_emphasis":
        subject, verb, obj, place = _SUBJECTS[i], _VERBS[i], _OBJECTS[i], _PLACES[i]
        return {"beginning": f"WHO {verb}s {obj} {place}?",
                "middle": f"{subject} {verb} WHAT {place}?",
                "end": f"{subject} {verb} {obj} WHEN or WHERE?"}
    text = sentence(cls, sentence_id).rstrip(".")
    return {"interpretation_1": f"Reading 1 of '{text}' (break or stress early).",
            "interpretation_2": f"Reading 2 of '{text}' (break or stress late)."}


def _syllables(text: str) -> int:
    """Roughly how many syllables ``text`` has (vowel groups; at least 4)."""
    vowels = "aeiouy"
    count, prev = 0, False
    for ch in text.lower():
        is_v = ch in vowels
        count += is_v and not prev
        prev = is_v
    return max(count, 4)


def render(text: str, speaker: str, prosody: Prosody, *, seed: int = 0, rate: int = RATE,
           base_f0: float | None = None) -> np.ndarray:
    """Synthesise one utterance of ``text`` with ``prosody`` (float32 mono at ``rate``).

    The text fixes the syllable count and vowel sequence (so all renditions of a sentence align);
    ``seed`` adds small natural variation (F0 wobble, timing, noise).

    Args:
        text: The sentence.
        speaker: "female" or "male" (the base F0, unless ``base_f0``).
        prosody: The prosody to render.
        seed: The random variation's seed.
        rate: The sampling rate (Hz).
        base_f0: The voice's base F0 (Hz), or None for the speaker's.

    Returns:
        The samples.
    """
    rng = np.random.default_rng(seed)
    vowel_rng = np.random.default_rng(_seed("vowels", text))
    n_syl = _syllables(text)
    durs, gaps, centers = _syllable_timing(n_syl, prosody, rng)
    starts = np.concatenate([[0.0], np.cumsum(durs + gaps)[:-1]])
    lead = 0.15
    total = lead + starts[-1] + durs[-1] + 0.2
    n = int(total * rate)
    t = np.arange(n) / rate
    pos = np.clip((t - lead) / (starts[-1] + durs[-1]), 0, 1)

    st = _semitones(prosody, pos, t, rng, vowel_rng)
    f0 = (base_f0 or SPEAKER_F0[speaker]) * 2 ** (st / 12)
    phase = 2 * np.pi * np.cumsum(f0) / rate

    env, f1, f2 = _syllable_shapes(n, rate, lead, starts, durs, centers, prosody, vowel_rng)
    sig = _harmonics(f0, phase, f1, f2, prosody.tilt, rate)
    sig *= env
    sig /= np.max(np.abs(sig)) + 1e-9
    sig *= 0.3 * 10 ** (prosody.gain_db / 20)
    sig += rng.normal(0, 3e-4, n)
    return np.clip(sig, -1, 1).astype(np.float32)


def _syllable_timing(n_syl: int, prosody: Prosody, rng: np.random.Generator):
    """Each syllable's duration, the pause after it and its centre (as a fraction of the
    utterance): accented syllables lengthen, and the one before a pause lengthens with it."""
    durs = np.full(n_syl, SYLLABLE_S / prosody.rate) * rng.uniform(0.9, 1.1, n_syl)
    centers = (np.arange(n_syl) + 0.5) / n_syl
    if prosody.accent_pos is not None and prosody.accent_size:
        near = np.exp(-0.5 * ((centers - prosody.accent_pos) / 0.08) ** 2)
        durs *= 1 + 0.5 * near * min(prosody.accent_size / 6, 1.5)
    gaps = np.zeros(n_syl)
    if prosody.pause_pos is not None and prosody.pause_s > 0:
        k = int(np.clip(round(prosody.pause_pos * n_syl), 1, n_syl - 1))
        gaps[k - 1] = prosody.pause_s
        durs[k - 1] *= 1 + prosody.pause_s  # pre-boundary lengthening grows with the break
    return durs, gaps, centers


def _semitones(prosody: Prosody, pos: np.ndarray, t: np.ndarray, rng: np.random.Generator,
               vowel_rng: np.random.Generator) -> np.ndarray:
    """The F0 contour in semitones relative to the speaker's base, at each sample (``pos``:
    the position in the utterance, 0-1; ``t``: the time in seconds): declination with a
    wobble, the final rise or fall, the accent, jitter and a random offset."""
    wobble_freq = vowel_rng.uniform(1.5, 3.0)
    st = prosody.f0_shift + prosody.f0_range * (
        1.5 - 3.0 * pos + 1.2 * np.sin(2 * np.pi * wobble_freq * pos + vowel_rng.uniform(0, 6)))
    st += prosody.final * np.clip((pos - 0.8) / 0.2, 0, 1) ** 1.5
    if prosody.accent_pos is not None:
        st += prosody.accent_size * np.exp(-0.5 * ((pos - prosody.accent_pos) / 0.06) ** 2)
    if prosody.jitter:
        st += prosody.jitter * np.sin(2 * np.pi * 11 * t + rng.uniform(0, 6))
    st += rng.normal(0, 0.15)
    return st


def _syllable_shapes(n: int, rate: int, lead: float, starts: np.ndarray, durs: np.ndarray,
                     centers: np.ndarray, prosody: Prosody, vowel_rng: np.random.Generator):
    """The amplitude envelope (one arch per syllable, accented ones louder) and the first two
    formants (one vowel per syllable) at each of the ``n`` samples."""
    env = np.zeros(n)
    f1 = np.full(n, 500.0)
    f2 = np.full(n, 1500.0)
    vowel_f1 = vowel_rng.choice([300.0, 450.0, 650.0, 750.0], len(durs))
    vowel_f2 = vowel_rng.choice([900.0, 1300.0, 1800.0, 2300.0], len(durs))
    for i in range(len(durs)):
        first = int((lead + starts[i]) * rate)
        stop = int((lead + starts[i] + durs[i]) * rate)
        seg = np.sin(np.linspace(0, np.pi, max(stop - first, 2))) ** 0.7
        env[first:first + len(seg)] = seg[: max(0, min(len(seg), n - first))]
        f1[first:stop], f2[first:stop] = vowel_f1[i], vowel_f2[i]
        if prosody.accent_pos is not None and prosody.accent_size:
            env[first:stop] *= 1 + 0.8 * np.exp(-0.5 * ((centers[i] - prosody.accent_pos) / 0.08) ** 2)
    return env, f1, f2


def _harmonics(f0: np.ndarray, phase: np.ndarray, f1: np.ndarray, f2: np.ndarray, tilt: float,
               rate: int) -> np.ndarray:
    """The voiced source: harmonics of ``f0`` (below the Nyquist margin) with a spectral
    ``tilt`` and peaks at the formants ``f1`` and ``f2``."""
    n = len(f0)
    k_max = int(min(40, 4000 // f0.min()))
    hop = 64  # harmonic amplitudes change slowly: compute them at a control rate
    f0_c, f1_c, f2_c = f0[::hop], f1[::hop], f2[::hop]
    sig = np.zeros(n)
    two_cos, s_prev, s_k = 2 * np.cos(phase), np.zeros(n), np.sin(phase)
    for k in range(1, k_max + 1):
        if k > 1:  # sin(k x) by the Chebyshev recurrence: no transcendental calls per harmonic
            s_prev, s_k = s_k, two_cos * s_k - s_prev
        fk = k * f0_c
        amp = k ** (-tilt) * (1 + 3 * np.exp(-((fk - f1_c) / 150) ** 2)
                              + 2 * np.exp(-((fk - f2_c) / 250) ** 2))
        amp = np.where(fk < rate / 2 - 500, amp, 0.0)
        sig += np.repeat(amp, hop)[:n] * s_k
    return sig


def build_corpus(out: str | Path, *, rate: int = RATE, wrap: bool = True) -> Path:
    """Write a complete synthetic ADEPT folder.

    Args:
        out: Where to write it.
        rate: The recordings' sampling rate (Hz).
        wrap: Whether to write it under ``out/ADEPT`` (as Zenodo's zip wraps it).

    Returns:
        The corpus's root.
    """
    out = Path(out)
    root = out / "ADEPT" if wrap else out
    prompts: dict[str, dict[str, dict[str, str]]] = {}
    for speaker, cls, sub, sid in expected_stimuli():
        key = f"{spec.SPEAKERS[speaker]}_{sid}"
        text = sentence(cls, sid)
        audio = render(text, speaker, PROFILES[(cls, sub)], seed=_seed("natural", cls, sub, key),
                       rate=rate)
        wav = root / WAV_DIR / cls / sub / f"{key}.wav"
        wav.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(wav), audio, rate, subtype="PCM_16")
        txt = root / TXT_DIR / cls / sub / f"{key}.txt"
        txt.parent.mkdir(parents=True, exist_ok=True)
        txt.write_text(text + "\n", encoding="utf-8")
        if spec.CLASSES[cls].design == "single":
            prompts.setdefault(cls, {})[key] = answer_options(cls, sid)
    (root / PROMPTS_FILE).write_text(json.dumps(prompts, indent=2), encoding="utf-8")
    return root


def check_replaceable(out: str | Path) -> None:
    """Refuse to write a synthetic corpus over anything but nothing, an empty folder or an
    earlier synthetic corpus (written again, the same recordings and texts): written over the
    real ADEPT.zip it would replace it without a word, and over the real extracted corpus it
    would leave a corpus that is neither. A corpus is recognised as synthetic as
    ``identity.is_synthetic`` does: by its sentences.

    Args:
        out: The zip or folder about to be written.

    Raises:
        UserError: ``out`` holds something other than a synthetic corpus.
    """
    from adept_eval.errors import UserError

    out = Path(out)
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    texts = _corpus_texts(out)
    if not texts or not all(_synthetic_text(path, text) for path, text in texts):
        raise UserError(f"{out}: already there and not a synthetic corpus (the real ADEPT, or "
                        "other files): make-synthetic writes only to a new path, an empty folder "
                        "or an earlier synthetic corpus; name another")


def _corpus_texts(out: Path) -> list[tuple[str, str]]:
    """Each transcript of the corpus folder or zip ``out``: (its path inside the corpus, its
    text); none when ``out`` is neither or cannot be read."""
    try:
        if out.is_dir():
            return [(p.relative_to(out).as_posix(), p.read_text(encoding="utf-8"))
                    for p in (out / TXT_DIR).rglob("*.txt")]
        if zipfile.is_zipfile(out):
            with zipfile.ZipFile(out) as zf:
                return [(n.split("/", 1)[1], zf.read(n).decode("utf-8"))
                        for n in zf.namelist() if n.startswith(f"ADEPT/{TXT_DIR}/")
                        and n.endswith(".txt")]
    except (OSError, ValueError, zipfile.BadZipFile):
        return []
    return []


def _synthetic_text(path: str, text: str) -> bool:
    """Whether the transcript at ``path`` (``txt/<class>/<sub>/<speaker>_<sentence>.txt``)
    holds the synthetic corpus's sentence for it."""
    parts = path.split("/")
    return len(parts) == 4 and text.strip() == sentence(parts[1], parts[3][:-4].split("_")[-1])


def zip_corpus(root: str | Path, out_zip: str | Path) -> Path:
    """Zip an ADEPT folder the way Zenodo's ADEPT.zip wraps it (an ``ADEPT/`` folder inside).

    Args:
        root: The ADEPT folder.
        out_zip: The zip to write.

    Returns:
        ``out_zip``.
    """
    root, out_zip = Path(root), Path(out_zip)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, ("ADEPT" / path.relative_to(root)).as_posix())
    return out_zip


def build_zip(out_zip: str | Path, *, rate: int = RATE) -> Path:
    """Write a synthetic ``ADEPT.zip`` laid out like Zenodo's.

    Args:
        out_zip: The zip to write.
        rate: The recordings' sampling rate (Hz).

    Returns:
        ``out_zip``.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return zip_corpus(build_corpus(tmp, rate=rate), out_zip)


def build_system(out: str | Path, *, transfer: float = 1.0, transfer_fraction: float = 1.0,
                 swap: tuple[str, str] | None = None, voice_shift: float = 2.0,
                 rate: int = 24000) -> Path:
    """A simulated prosody-transfer system's samples, laid out as ``adept-eval manifest`` says.

    ``transfer`` is how much of each reference's prosody the system reproduces (1 copies it,
    0 speaks every stimulus with neutral prosody); ``transfer_fraction`` of the stimuli
    (a deterministic choice) get that transfer, the rest neutral prosody; ``swap`` exchanges two
    subcategories' prosody; the system's voice sits ``voice_shift`` semitones above ADEPT's and renders at
    ``rate``, so listeners must normalise for the speaker.

    Args:
        out: The system's folder.
        transfer: How much of each reference's prosody is reproduced.
        transfer_fraction: The share of stimuli that get ``transfer``.
        swap: Two subcategories whose prosody is exchanged, or None.
        voice_shift: The voice's offset from ADEPT's (semitones).
        rate: The samples' sampling rate (Hz).

    Returns:
        ``out``.
    """
    out = Path(out)
    for speaker, cls, sub, sid in expected_stimuli():
        key = f"{spec.SPEAKERS[speaker]}_{sid}"
        source = sub
        if swap and sub in swap:
            source = swap[1] if sub == swap[0] else swap[0]
        amount = transfer if (_seed("fraction", cls, sub, key) % 1000) < transfer_fraction * 1000 \
            else 0.0
        prosody = PROFILES[(cls, source)].towards_neutral(1.0 - amount)
        base = SPEAKER_F0[speaker] * 2 ** (voice_shift / 12)
        audio = render(sentence(cls, sid), speaker, prosody, rate=rate, base_f0=base,
                       seed=_seed("system", cls, sub, key))
        path = out / cls / sub / f"{key}.wav"
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(path), audio, rate, subtype="PCM_16")
    return out
