"""Systems that carry the references' prosody but realise or deliver it differently.

The plain validation systems (``systems``) realise *exactly* the references' plan. A real
prosody-transfer system realises the same intent its own way, and a real pipeline post-processes
its audio. Three families of variants of the *copy* system test whether a listener measures the
prosody that was transferred rather than how it was realised or delivered:

- **realisation** (``REALISATIONS``): the focused word and the phrase break marked with the
  engine's own markup (``native``), or by one cue at a time (F0 only, as a rise or a fall, with
  and without post-focus compression; lengthening only; loudness only), and boundaries marked
  by pre-boundary lengthening and an F0 reset with a short pause or none, or by one of those
  cues alone. Only the classes the cue belongs to are re-rendered; the rest of the system is
  the copy system's.
- **delivery** (``DELIVERIES``): the copy system's files post-processed as pipelines do:
  per-file loudness normalisation (RMS, EBU R128), leading/trailing silence, white noise at 20
  and 30 dB SNR, a small room's reverberation, MP3/Ogg at 16-24 kHz, 16 and 22.05 kHz PCM,
  tempo and pitch changed globally, and one voice for both speakers.
- **dose** (``DOSES``): every effect of every plan at a fraction of its size (0 is the flat
  system, 1 the copy system).
- **delivery-extra** (``EXTRA_DELIVERIES``): what else a pipeline or recording chain may do,
  beyond the issue's list, reported and never a target: pink noise, a telephone channel, mains
  hum, clipping, speed changed by resampling (pitch with it), peak normalisation, a 4 kHz
  low-pass, a large live room, a dynamic-range compressor, 20 dB less level, Opus at 16 kHz.
- **monotone** (``MONOTONE``): the copy system with every rendition's pitch held at one value
  (PSOLA): at its own median (``monotone``: no pitch movement, the register kept) or at 150 Hz
  for every rendition of both speakers (``monotone-150hz``: no pitch information at all).
  Speech with the plan's timing, pauses and loudness and no intonation must be scored (on the
  cues it keeps), never refused as "no speech".

Every variant is rendered once into ``<cache>/<engine>-v<N>/`` and reused (a delivery is
rendered again when its transform's code changes: ``delivery_digest``).
"""

from __future__ import annotations

import hashlib
import inspect
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import soundfile as sf

from adept_eval.corpora import spec
from adept_eval.signal.audio import find_audio, zero_phase_filtered
from adept_eval.corpora.corpus import WAV_DIR
from benchmarks.validation import sentences as S
from benchmarks.validation.engines import ENGINES, PRE_BOUNDARY_LENGTHEN, Realisation, praat_seeded
from benchmarks.validation.systems import render_engine, stimuli

FOCUS = S.FOCUS_CLASSES
BREAK = S.BREAK_CLASSES


@dataclass(frozen=True)
class RealisationFamily:
    how: Realisation
    classes: tuple[str, ...]  # the classes whose stimuli this realisation changes
    note: str = ""

    def renderable_by(self, engine: str) -> bool:
        """Whether ``engine`` can write this realisation: a falling accent (``can_fall``),
        post-focus compression (``can_compress``)."""
        e = ENGINES[engine]
        return ((not self.how.fall or e.can_fall())
                and (self.how.post_focus_range >= 1.0 or e.can_compress()))


_F0_ONLY = Realisation(accent_db=0.0, lengthen=1.0)
_NO_BOUNDARY_CUE = Realisation(break_s=0.0, pre_boundary_lengthen=1.0, comma=False)
REALISATIONS: dict[str, RealisationFamily] = {
    "native": RealisationFamily(
        Realisation(native=True), FOCUS + BREAK,
        note="espeak-ng <emphasis> and a comma; festival: SABLE <EMPH> on its kal diphone "
             "voice (its other voices ignore markup: focus as planned) and a comma phrased by "
             "its punctuation rules; flite and Pico: a comma (no focus markup: focus as planned)"),
    "f0-rise": RealisationFamily(_F0_ONLY, FOCUS),
    "f0-rise+pfc": RealisationFamily(replace(_F0_ONLY, post_focus_range=0.4), FOCUS),
    "f0-fall": RealisationFamily(replace(_F0_ONLY, fall=True), FOCUS,
                                 note="PSOLA engines only (espeak-ng has no markup for it)"),
    "f0-fall+pfc": RealisationFamily(replace(_F0_ONLY, fall=True, post_focus_range=0.4),
                                     FOCUS),
    "lengthening": RealisationFamily(Realisation(accent_st=0.0, accent_db=0.0), FOCUS),
    "loudness": RealisationFamily(Realisation(accent_st=0.0, lengthen=1.0), FOCUS),
    "boundary-short-pause": RealisationFamily(
        Realisation(break_s=0.1, reset_st=2.0, comma=False), BREAK,
        note="100 ms pause, pre-boundary lengthening, F0 reset"),
    "boundary-no-pause": RealisationFamily(
        Realisation(break_s=0.0, reset_st=2.0, comma=False), BREAK,
        note="pre-boundary lengthening and F0 reset only"),
    # the boundary one cue at a time, as the focus is above: each adds one cue to a break
    # marked by none (no pause, no lengthening, no reset, no comma)
    "boundary-pause-only": RealisationFamily(
        replace(_NO_BOUNDARY_CUE, break_s=0.1), BREAK,
        note="a 100 ms pause only: no lengthening, no reset"),
    "boundary-brief-pause-only": RealisationFamily(
        replace(_NO_BOUNDARY_CUE, break_s=0.06), BREAK,
        note="a 60 ms pause only (as short as flite's own comma): no lengthening, no reset"),
    "boundary-lengthening-only": RealisationFamily(
        replace(_NO_BOUNDARY_CUE, pre_boundary_lengthen=PRE_BOUNDARY_LENGTHEN), BREAK,
        note="pre-boundary lengthening only: no pause, no reset"),
    "boundary-reset-only": RealisationFamily(
        replace(_NO_BOUNDARY_CUE, reset_st=2.0), BREAK,
        note="an F0 reset only: no pause, no lengthening"),
}

DOSES = (0.0, 1 / 3, 2 / 3, 1.0)


def _seed(*parts: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(
        hashlib.sha256("|".join(parts).encode()).digest()[:8], "big"))


def _copy_tree(src: Path, dst: Path) -> None:
    for f in src.rglob("*.wav"):
        out = dst / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, out)


def render_realisation(engine: str, family: str, cache: Path, *, sentence_ids: int = 5,
                       progress: bool = False) -> Path:
    """The copy system with ``family``'s classes re-rendered by ``engine`` its way (cached)."""
    fam = REALISATIONS[family]
    if not fam.renderable_by(engine):
        raise ValueError(f"realisation {family!r} cannot be rendered by {engine}")
    base = render_engine(engine, cache, progress=progress)
    out = base / f"realisation-{family}{_part(sentence_ids)}"
    return _render(engine, fam.how, fam.classes, base, out, sentence_ids)


def render_dose(engine: str, dose: float, cache: Path, *, sentence_ids: int = 5,
                progress: bool = False) -> Path:
    """Every plan at ``dose`` of its size (0: the flat system, 1: the copy system)."""
    base = render_engine(engine, cache, progress=progress)
    if dose == 0.0:
        return base / "flat"
    if dose == 1.0:
        return base / "ADEPT" / WAV_DIR
    out = base / f"dose-{dose:.3f}{_part(sentence_ids)}"
    return _render(engine, Realisation(dose=dose), tuple(spec.CLASSES), base, out, sentence_ids)


def render_one_voice(engine: str, cache: Path, *, sentence_ids: int = 5,
                     progress: bool = False) -> Path:
    """The copy system with the engine's male voice speaking for both speakers."""
    base = render_engine(engine, cache, progress=progress)
    one = ENGINES[engine].one_voice()
    out = base / f"delivery-one-voice{_part(sentence_ids)}"
    return _render(engine, Realisation(), tuple(spec.CLASSES), base, out, sentence_ids,
                   engine_obj=one)


def _part(sentence_ids: int) -> str:
    """Folder suffix of a variant rendered for fewer sentences than the whole set (the rest of
    such a folder is the copy system's, so it must not pass for a complete rendering)."""
    return "" if sentence_ids >= 5 else f"-first{sentence_ids}"


def _render(engine: str, how: Realisation, classes: tuple[str, ...], base: Path, out: Path,
            sentence_ids: int, engine_obj=None) -> Path:
    done = out / ".complete"
    if done.exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    eng = engine_obj or ENGINES[engine]
    _copy_tree(base / "ADEPT" / WAV_DIR, out)
    for speaker in spec.SPEAKERS:
        jobs = [(S.sentence(c, sid), S.plan(c, sub, sid),
                 f"{c}/{sub}/{spec.SPEAKERS[speaker]}_{sid}")
                for sp, c, sub, sid in stimuli(sentence_ids) if sp == speaker and c in classes]
        for start in range(0, len(jobs), 20):
            batch = jobs[start:start + 20]
            for (_, _, rel), (x, rate) in zip(batch, eng.render_many(batch, speaker, how)):
                sf.write(str(out / f"{rel}.wav"), x, rate, subtype="PCM_16")
    done.touch()
    return out


# --------------------------------------------------------------------------- delivery
Transform = Callable[[np.ndarray, int, np.random.Generator], tuple[np.ndarray, int]]


def _active_rms(x: np.ndarray, rate: int) -> float:
    """RMS over the frames within 30 dB of the loudest 20 ms frame (the speech, not its
    leading/trailing silence): the level a signal-to-noise ratio refers to."""
    hop = max(1, int(0.02 * rate))
    n = len(x) // hop
    frames = (x[: n * hop].reshape(n, hop) ** 2).mean(axis=1)
    db = 10 * np.log10(frames + 1e-12)
    return float(np.sqrt(frames[db > db.max() - 30].mean()))


def _peak(x: np.ndarray) -> float:
    return float(np.max(np.abs(x))) if x.size else 0.0


def _fit(x: np.ndarray) -> np.ndarray:
    peak = _peak(x)
    return x / peak * 0.98 if peak > 0.98 else x


def _rms_normalise(x, rate, rng, target_db=-20.0):
    rms = float(np.sqrt(np.mean(x ** 2)))
    return _fit(x * 10 ** (target_db / 20) / max(rms, 1e-9)), rate


def _r128_normalise(x, rate, rng, target_lufs=-23.0):
    import pyloudnorm

    meter = pyloudnorm.Meter(rate)
    loudness = meter.integrated_loudness(x)
    return _fit(pyloudnorm.normalize.loudness(x, loudness, target_lufs)), rate


def _speech_level_normalise(gate_db: float, target_db: float = -26.0) -> Transform:
    """Normalise what is spoken, not the whole file: the RMS of the 20 ms frames within
    ``gate_db`` of the loudest set to ``target_db`` (an active speech level, as TTS pipelines
    measure it; 15.9 dB is ITU-T P.56's margin)."""
    def go(x, rate, rng):
        hop = max(1, int(0.02 * rate))
        n = len(x) // hop
        frames = (x[: n * hop].reshape(n, hop) ** 2).mean(axis=1)
        db = 10 * np.log10(frames + 1e-12)
        level = float(np.sqrt(frames[db > db.max() - gate_db].mean()))
        return _fit(x * 10 ** (target_db / 20) / max(level, 1e-9)), rate
    return go


def _edge_silence(x, rate, rng):
    lead, trail = rng.uniform(0.0, 1.0, 2)
    return np.concatenate([np.zeros(int(lead * rate)), x, np.zeros(int(trail * rate))]), rate


def _noise(snr_db: float) -> Transform:
    def add(x, rate, rng):
        level = _active_rms(x, rate) * 10 ** (-snr_db / 20)
        return _fit(x + rng.normal(0.0, level, len(x))), rate
    return add


def _reverb(x, rate, rng, rt60=0.3, direct_to_reverberant_db=3.0):
    """A room: the direct sound plus exponentially decaying noise (by default a small room,
    RT60 300 ms, the direct sound 3 dB above the reverberation)."""
    from scipy.signal import fftconvolve

    t = np.arange(int(rt60 * rate)) / rate
    tail = rng.normal(0.0, 1.0, len(t)) * np.exp(-6.9 * t / rt60)
    tail[: int(0.002 * rate)] = 0.0  # the first reflections arrive after the direct sound
    tail *= 10 ** (-direct_to_reverberant_db / 20) / np.sqrt(np.sum(tail ** 2))
    ir = tail
    ir[0] = 1.0
    return _fit(fftconvolve(x, ir)[: len(x) + len(t) // 2]), rate


def _resample(new_rate: int) -> Transform:
    def go(x, rate, rng):
        from scipy.signal import resample_poly

        g = np.gcd(int(rate), int(new_rate))
        return _fit(resample_poly(x, new_rate // g, rate // g)), new_rate
    return go


def _tempo(factor: float) -> Transform:
    """Faster (factor > 1) or slower speech, pitch kept (Praat's overlap-add lengthening)."""
    def go(x, rate, rng):
        import parselmouth
        from parselmouth.praat import call

        with praat_seeded(int(rng.integers(2 ** 31))):
            snd = call(parselmouth.Sound(x, rate), "Lengthen (overlap-add)", 60, 600, 1 / factor)
        return _fit(snd.values[0]), rate
    return go


def _pitch(semitones: float) -> Transform:
    """Every F0 moved by ``semitones``, duration kept (Praat's PSOLA)."""
    def go(x, rate, rng):
        import parselmouth
        from parselmouth.praat import call

        snd = parselmouth.Sound(x, rate)
        manip = call(snd, "To Manipulation", 0.01, 60, 600)
        tier = call(manip, "Extract pitch tier")
        call(tier, "Multiply frequencies", snd.xmin, snd.xmax, 2 ** (semitones / 12))
        call([manip, tier], "Replace pitch tier")
        with praat_seeded(int(rng.integers(2 ** 31))):
            return _fit(call(manip, "Get resynthesis (overlap-add)").values[0]), rate
    return go


@dataclass(frozen=True)
class Delivery:
    transform: Transform | None  # None: a rendering of its own (``render_one_voice``)
    format: str = "WAV"  # soundfile format of the delivered files
    subtype: str | None = "PCM_16"
    suffix: str = ".wav"


DELIVERIES: dict[str, Delivery] = {
    "rms-normalised": Delivery(_rms_normalise),
    "r128-normalised": Delivery(_r128_normalise),
    "speech-level-30db": Delivery(_speech_level_normalise(30.0)),
    "speech-level-p56": Delivery(_speech_level_normalise(15.9)),
    "edge-silence": Delivery(_edge_silence),
    "noise-30db": Delivery(_noise(30.0)),
    "noise-20db": Delivery(_noise(20.0)),
    "reverb": Delivery(_reverb),
    "mp3-24k": Delivery(_resample(24000), "MP3", "MPEG_LAYER_III", ".mp3"),
    "mp3-16k": Delivery(_resample(16000), "MP3", "MPEG_LAYER_III", ".mp3"),
    "ogg-22k": Delivery(_resample(22050), "OGG", "VORBIS", ".ogg"),
    "pcm-16k": Delivery(_resample(16000)),
    "pcm-22k": Delivery(_resample(22050)),
    "tempo+15%": Delivery(_tempo(1.15)),
    "tempo-15%": Delivery(_tempo(1 / 1.15)),
    "pitch+4st": Delivery(_pitch(4.0)),
    "pitch-4st": Delivery(_pitch(-4.0)),
    "one-voice": Delivery(None),
}


# Beyond the list: reported, never a target (``benchmark.check_targets`` holds them to
# the delivery bound in a line of their own): what else a pipeline or recording chain may do.
def _pink_noise(snr_db: float, low_hz: float = 50.0) -> Transform:
    """Noise whose power falls by 3 dB an octave from ``low_hz`` up (none below it, so no DC or
    subsonic rumble takes a share of the level), ``snr_db`` below the speech's active level:
    more of it where speech has its energy than white noise at the same SNR."""
    def add(x, rate, rng):
        spectrum = np.fft.rfft(rng.normal(0.0, 1.0, len(x)))
        hz = np.fft.rfftfreq(len(x), 1 / rate)
        shape = np.zeros_like(hz)
        band = hz >= low_hz
        shape[band] = 1.0 / np.sqrt(hz[band])
        noise = np.fft.irfft(spectrum * shape, len(x))
        noise *= _active_rms(x, rate) * 10 ** (-snr_db / 20) / max(
            float(np.sqrt(np.mean(noise ** 2))), 1e-12)
        return _fit(x + noise), rate
    return add


def _telephone(x, rate, rng):
    """A telephone channel: 8 kHz, 300-3400 Hz."""
    y, _ = _resample(8000)(x, rate, rng)
    return _fit(zero_phase_filtered(y, 8000, (300.0, 3400.0), "bandpass")), 8000


def _hum(x, rate, rng, hz=50.0, below_peak_db=30.0):
    """Mains hum: a 50 Hz tone ``below_peak_db`` under the file's peak."""
    t = np.arange(len(x)) / rate
    return _fit(x + _peak(x) * 10 ** (-below_peak_db / 20) * np.sin(2 * np.pi * hz * t)), rate


def _clipped(x, rate, rng, over_db=6.0):
    """Each file's peak driven ``over_db`` past full scale and clipped (so every rendition is
    also brought to one peak level)."""
    return np.clip(x / max(_peak(x), 1e-9) * 10 ** (over_db / 20), -0.99, 0.99), rate


def _speed(factor: float) -> Transform:
    """Played ``factor`` times as fast by resampling: tempo and pitch move together."""
    from fractions import Fraction

    ratio = Fraction(factor).limit_denominator(1000)

    def go(x, rate, rng):
        from scipy.signal import resample_poly

        return _fit(resample_poly(x, ratio.denominator, ratio.numerator)), rate
    return go


def _peak_normalise(x, rate, rng, target_db=-1.0):
    """Each file's peak brought to ``target_db`` dBFS."""
    return x * 10 ** (target_db / 20) / max(_peak(x), 1e-9), rate


def _lowpass(hz: float) -> Transform:
    """Everything above ``hz`` removed (a 6th-order Butterworth, forwards and backwards)."""
    def go(x, rate, rng):
        if hz >= rate / 2:  # nothing above it to remove
            return x, rate
        return _fit(zero_phase_filtered(x, rate, hz, "lowpass", order=6)), rate
    return go


def _reverb_large(x, rate, rng):
    """A large, live room: RT60 800 ms with as much reverberation as direct sound."""
    return _reverb(x, rate, rng, rt60=0.8, direct_to_reverberant_db=0.0)


def _compressed(x, rate, rng, below_peak_db=20.0, ratio=4.0, release_s=0.1):
    """A dynamic-range compressor as voice chains use one: where the level (1 ms RMS, followed
    with an instant attack and a 100 ms release, looked one millisecond ahead) stands above a
    threshold ``below_peak_db`` under the file's loudest, it rises one decibel for every
    ``ratio``; make-up gain brings the file's peak back to where it was (so quieter syllables
    come up by as much as 15 dB against the loudest, and nothing is clipped or rescaled)."""
    if x.size == 0:
        return x, rate
    hop = max(1, int(0.001 * rate))
    n = -(-len(x) // hop)
    frames = np.pad(np.asarray(x, dtype=np.float64), (0, n * hop - len(x))).reshape(n, hop)
    level = 10 * np.log10(np.mean(frames ** 2, axis=1) + 1e-12)
    release = np.exp(-hop / (release_s * rate))
    envelope = np.empty(n)
    current = level[0]
    for i, value in enumerate(level):  # the follower's state runs frame to frame
        current = max(value, release * current + (1 - release) * value)
        envelope[i] = current
    envelope = np.maximum(envelope, np.append(envelope[1:], envelope[-1]))  # one frame ahead
    over = np.maximum(envelope - (envelope.max() - below_peak_db), 0.0)
    y = x * 10 ** (np.repeat(-over * (1 - 1 / ratio), hop)[: len(x)] / 20)
    peak = _peak(y)
    return (y * (_peak(x) / peak) if peak > 0 else x), rate


def _quiet(x, rate, rng, by_db=20.0):
    """Everything ``by_db`` quieter (a chain that never brings its output up), still 16-bit;
    20 dB keeps every rendition of every voice set above ``audio.AUDIBLE_DBFS``, the level
    that holds sound without a closer look (30 dB less took some of them under it)."""
    return x * 10 ** (-by_db / 20), rate


EXTRA_DELIVERIES: dict[str, Delivery] = {
    "pink-noise-20db": Delivery(_pink_noise(20.0)),
    "telephone-8k": Delivery(_telephone),
    "hum-50hz": Delivery(_hum),
    "clipped-6db": Delivery(_clipped),
    "speed+10%": Delivery(_speed(1.1)),
    "speed-10%": Delivery(_speed(1 / 1.1)),
    "peak-normalised": Delivery(_peak_normalise),
    "lowpass-4k": Delivery(_lowpass(4000.0)),
    "reverb-large": Delivery(_reverb_large),
    "compressed": Delivery(_compressed),
    "quiet-20db": Delivery(_quiet),
    "opus-16k": Delivery(_resample(16000), "OGG", "OPUS", ".opus"),
}


def _monotone(hz: float | None = None) -> Transform:
    """The pitch held at one value throughout (Praat's PSOLA), timing and loudness kept: at
    ``hz``, or with None at the rendition's own median F0 (its register kept, its movement
    gone)."""
    def go(x, rate, rng):
        import parselmouth
        from parselmouth.praat import call

        snd = parselmouth.Sound(x, rate)
        f0 = snd.to_pitch_ac(time_step=0.01, pitch_floor=60, pitch_ceiling=600
                             ).selected_array["frequency"]
        if not np.any(f0 > 0):  # nothing voiced: nothing to flatten
            return x, rate
        manip = call(snd, "To Manipulation", 0.01, 60, 600)
        tier = call("Create PitchTier", "monotone", snd.xmin, snd.xmax)
        call(tier, "Add point", (snd.xmin + snd.xmax) / 2,
             float(np.median(f0[f0 > 0])) if hz is None else hz)
        call([manip, tier], "Replace pitch tier")
        with praat_seeded(int(rng.integers(2 ** 31))):
            return _fit(call(manip, "Get resynthesis (overlap-add)").values[0]), rate
    return go


# both speakers at 150 Hz, between the voices' median pitches (neutral emotion sentences: male
# 90-130 Hz, female 170-213 Hz): 2-9 semitones up for the male voices, 2-6 down for the female
MONOTONE: dict[str, Delivery] = {"monotone": Delivery(_monotone()),
                                 "monotone-150hz": Delivery(_monotone(150.0))}


def render_delivery(engine: str, name: str, cache: Path, *, sentence_ids: int = 5,
                    progress: bool = False) -> Path:
    """The copy system's files delivered through ``name`` (``DELIVERIES``,
    ``EXTRA_DELIVERIES`` or ``MONOTONE``; cached)."""
    d = {**DELIVERIES, **EXTRA_DELIVERIES, **MONOTONE}[name]
    if d.transform is None:
        return render_one_voice(engine, cache, sentence_ids=sentence_ids, progress=progress)
    base = render_engine(engine, cache, progress=progress)
    out = base / f"delivery-{name}"
    done = out / ".complete"
    stamp = delivery_digest(d)
    if done.exists() and done.read_text() == stamp:
        return out
    if out.exists():
        shutil.rmtree(out)
    src = base / "ADEPT" / WAV_DIR
    for f in sorted(src.rglob("*.wav")):
        rel = f.relative_to(src)
        x, rate = sf.read(str(f), dtype="float64")
        y, new_rate = d.transform(x, rate, _seed(name, str(rel)))
        target = (out / rel).with_suffix(d.suffix)
        target.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(target), y.astype(np.float32), new_rate, format=d.format, subtype=d.subtype)
    done.write_text(stamp)
    return out


def delivery_digest(d: Delivery) -> str:
    """What a delivery's files depend on besides the copy system's: the source of its transform
    and of every function of this module it calls, the values it closes over, its defaults and
    its output format. Stored with the rendered files, so that a transform changed under the same
    name is rendered again rather than read back from an older cache."""
    digest, seen = hashlib.sha256(f"{d.format}|{d.subtype}|{d.suffix}".encode()), set()

    def names(code) -> set[str]:
        out = set(code.co_names)
        for const in code.co_consts:
            if inspect.iscode(const):
                out |= names(const)
        return out

    def add(f) -> None:
        if f in seen:
            return
        seen.add(f)
        digest.update(inspect.getsource(f).encode())
        digest.update(repr(f.__defaults__).encode())
        for cell in f.__closure__ or ():
            value = cell.cell_contents
            add(value) if inspect.isfunction(value) else digest.update(repr(value).encode())
        for name in sorted(names(f.__code__)):
            g = f.__globals__.get(name)
            if inspect.isfunction(g) and g.__module__ == f.__module__:
                add(g)

    add(d.transform)
    return digest.hexdigest()


def stimulus_path(folder: Path, stimulus: str) -> str:
    """The file of ``stimulus`` in a system folder, whatever its audio format."""
    found = find_audio(folder / stimulus)
    return str(found) if found else str(folder / f"{stimulus}.wav")
