"""Real TTS engines speaking a sentence with a prosodic ``Plan``.

- ``espeak``: espeak-ng driven by SSML (``<prosody>`` for level, range, rate and volume,
  a local ``<prosody>`` raising, slowing and strengthening the accented word, ``<break>``
  for a phrase break); the engine realises the prosody itself.
- ``festival``: festival's own voices (``cmu_us_slt_arctic_hts`` female, ``kal_diphone`` /
  ``ked_diphone`` male) speak the *plain* text; festival ignores most markup on these voices, so
  the plan is imposed afterwards with Praat's PSOLA (pitch tier and duration tier of a
  Manipulation, via parselmouth) using festival's own word timings, plus silence for breaks and
  gain for loudness.
- ``flite``: flite's own voices (``slt`` female, ``rms`` male) speak the plain text (flite
  takes no prosodic markup); word timings come from its segment end times (``-psdur``) and
  the plan is imposed with the same PSOLA as festival's. (flite's ``slt`` is built from the
  same speaker's recordings as festival's ``cmu_us_slt_arctic_hts``, by another synthesis
  method; espeak-ng shares nothing with either.)

All need the Debian packages ``espeak-ng`` and ``festival`` (+ ``festvox-us-slt-hts``,
``festvox-kallpc16k``, ``festvox-kdlpc16k``) and ``flite``; ``available()`` says which are
installed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from .sentences import Plan, Sentence

ACCENT_ST = 5.0  # pitch accent imposed on a focused word (PSOLA engines)
ACCENT_DB = 4.0
ACCENT_LENGTHEN = 1.35
BREAK_S = 0.32
PRE_BOUNDARY_LENGTHEN = 1.3


@dataclass(frozen=True)
class Engine:
    name: str
    voices: dict[str, str]  # ADEPT speaker ("female"/"male") -> engine voice

    def available(self) -> bool:
        raise NotImplementedError

    def render_many(self, items: list[tuple[Sentence, Plan, str]], speaker: str
                    ) -> list[tuple[np.ndarray, int]]:
        raise NotImplementedError


def _percent(factor: float) -> str:
    return f"{(factor - 1) * 100:+.0f}%"


@dataclass(frozen=True)
class Espeak(Engine):
    def available(self) -> bool:
        return shutil.which("espeak-ng") is not None

    @staticmethod
    def ssml(sentence: Sentence, plan: Plan) -> str:
        words = list(sentence.words)
        if plan.focus is not None:
            # a local <prosody> only: espeak-ng realises <emphasis> as a nuclear fall from the
            # voice's ordinary level that overrides the pitch asked for (an emphasised first
            # word came out *lower* than unemphasised), so the plan's raised accent was lost
            words[plan.focus] = (f'<prosody pitch="+35%" rate="-25%" volume="+4dB">'
                                 f'{words[plan.focus]}</prosody>')
        if plan.break_after is not None:
            words[plan.break_after] += f', <break time="{int(BREAK_S * 1000)}ms"/>'
        end = "?" if plan.question else "."
        body = " ".join(words) + end
        attrs = (f'pitch="{_percent(2 ** (plan.pitch_st / 12))}" range="{_percent(plan.range_)}" '
                 f'rate="{_percent(plan.rate)}" volume="{plan.gain_db:+.0f}dB"')
        return f"<speak><prosody {attrs}>{body}</prosody></speak>"

    def render_many(self, items, speaker):
        out = []
        with tempfile.TemporaryDirectory() as tmp:
            wav = Path(tmp) / "x.wav"
            for sentence, plan, _ in items:
                subprocess.run(["espeak-ng", "-m", "-v", self.voices[speaker], "-w", str(wav),
                                self.ssml(sentence, plan)], check=True, capture_output=True)
                x, rate = sf.read(str(wav), dtype="float32")
                out.append((x, rate))
        return out


@dataclass(frozen=True)
class PsolaEngine(Engine):
    """An engine that speaks plain text and reports word timings; the plan is imposed after."""

    def plain(self, items: list[tuple[Sentence, Plan, str]], speaker: str
              ) -> list[tuple[np.ndarray, int, list[tuple[float, float]]]]:
        """(samples, rate, word (start, end) seconds) of each sentence spoken from plain text."""
        raise NotImplementedError

    def render_many(self, items, speaker):
        out = []
        for (sentence, plan, _), (x, rate, words) in zip(items, self.plain(items, speaker)):
            if len(words) != len(sentence.words):
                raise RuntimeError(f"{self.name} split {sentence.text!r} into {len(words)} words")
            out.append((impose(x.astype(np.float64), rate, words, plan), rate))
        return out


@dataclass(frozen=True)
class Festival(PsolaEngine):
    def available(self) -> bool:
        return shutil.which("festival") is not None

    def plain(self, items, speaker):
        """One festival process per batch: plain text, then word timings."""
        voice = self.voices[speaker]
        with tempfile.TemporaryDirectory() as tmp:
            lines = [f"(voice_{voice})"]
            for i, (sentence, plan, _) in enumerate(items):
                text = " ".join(sentence.words) + ("?" if plan.question else ".")
                lines.append(f'(set! utt (SynthText "{text}"))')
                lines.append(f"(utt.save.wave utt \"{tmp}/{i}.wav\" 'riff)")
                lines.append(f'(format t "U {i}\\n")')
                lines.append('(mapcar (lambda (w) (format t "W %f %f\\n" '
                             '(item.feat w "word_start") (item.feat w "word_end"))) '
                             "(utt.relation.items utt 'Word))")
            script = Path(tmp) / "batch.scm"
            script.write_text("\n".join(lines) + "\n")
            proc = subprocess.run(["festival", "-b", str(script)], check=True,
                                  capture_output=True, text=True)
            times: dict[int, list[tuple[float, float]]] = {}
            current = -1
            for line in proc.stdout.splitlines():
                if line.startswith("U "):
                    current = int(line.split()[1])
                    times[current] = []
                elif line.startswith("W ") and current >= 0:
                    _, a, b = line.split()
                    times[current].append((float(a), float(b)))
            out = []
            for i in range(len(items)):
                x, rate = sf.read(f"{tmp}/{i}.wav", dtype="float32")
                out.append((x, rate, times[i]))
        return out


@dataclass(frozen=True)
class Flite(PsolaEngine):
    """flite speaks plain text and prints its segments' end times (``-psdur``); words are
    found by counting each word's segments (flite's own ``-ps`` on the word alone)."""

    def available(self) -> bool:
        return shutil.which("flite") is not None

    def _segments(self, voice: str, text: str, wav: str = "none") -> list[tuple[str, float]]:
        proc = subprocess.run(["flite", "-voice", voice, "-psdur", "-t", text, "-o", wav],
                              check=True, capture_output=True, text=True)
        out = []
        for item in proc.stdout.split():
            name, _, end = item.rpartition(":")
            out.append((name, float(end)))
        return out

    def plain(self, items, speaker):
        voice = self.voices[speaker]
        counts: dict[str, int] = {}
        out = []
        with tempfile.TemporaryDirectory() as tmp:
            wav = str(Path(tmp) / "x.wav")
            for sentence, plan, _ in items:
                text = " ".join(sentence.words) + ("?" if plan.question else ".")
                phones = self._segments(voice, text, wav)
                x, rate = sf.read(wav, dtype="float32")
                words, start, k = [], 0.0, 0
                # skip leading pauses; each word takes as many segments as it has alone
                while k < len(phones) and phones[k][0] == "pau":
                    start = phones[k][1]
                    k += 1
                for w in sentence.words:
                    bare = w.strip(".,?!;:")
                    if bare not in counts:
                        counts[bare] = sum(n != "pau" for n, _ in self._segments(voice, bare))
                    end_k = k + counts[bare]
                    if end_k > len(phones) or any(n == "pau" for n, _ in phones[k:end_k]):
                        raise RuntimeError(f"flite: cannot find the words of {text!r}")
                    words.append((start, phones[end_k - 1][1]))
                    start, k = phones[end_k - 1][1], end_k
                if any(n != "pau" for n, _ in phones[k:]):
                    raise RuntimeError(f"flite: cannot find the words of {text!r}")
                out.append((x, rate, words))
        return out


def _ramp_mask(t: np.ndarray, a: float, b: float, edge: float = 0.03) -> np.ndarray:
    """1 inside [a, b], 0 outside, with raised-cosine edges of ``edge`` seconds."""
    up = np.clip((t - (a - edge)) / edge, 0, 1)
    down = np.clip(((b + edge) - t) / edge, 0, 1)
    m = np.minimum(up, down)
    return 0.5 - 0.5 * np.cos(np.pi * m)


def impose(x: np.ndarray, rate: int, words: list[tuple[float, float]], plan: Plan) -> np.ndarray:
    """Impose ``plan`` on plain synthetic speech with known word timings (PSOLA, gain, pauses)."""
    import parselmouth
    from parselmouth.praat import call

    words = [tuple(w) for w in words]
    if plan.break_after is not None:  # a pause after the word, shifting what follows
        cut = words[plan.break_after][1]
        k = int(cut * rate)
        x = np.concatenate([x[:k], np.zeros(int(BREAK_S * rate)), x[k:]])
        words = [(a + BREAK_S, b + BREAK_S) if a >= cut - 1e-6 else (a, b) for a, b in words]
    t = np.arange(len(x)) / rate
    gain = np.full(len(x), plan.gain_db)
    if plan.focus is not None:
        a, b = words[plan.focus]
        gain += ACCENT_DB * _ramp_mask(t, a, b)
    x = x * 10 ** (gain / 20)

    snd = parselmouth.Sound(x, rate)
    manip = call(snd, "To Manipulation", 0.01, 60, 500)
    tier = call(manip, "Extract pitch tier")
    n = int(call(tier, "Get number of points"))
    pt = np.array([call(tier, "Get time from index", i + 1) for i in range(n)])
    hz = np.array([call(tier, "Get value at index", i + 1) for i in range(n)])
    if n:
        st = 12 * np.log2(hz / 100)
        med = np.median(st)
        new = med + plan.pitch_st + plan.range_ * (st - med)
        if plan.focus is not None:
            a, b = words[plan.focus]
            new += ACCENT_ST * _ramp_mask(pt, a, b, 0.05)
        if plan.final_st:
            a, b = words[-1]
            new += plan.final_st * np.clip((pt - a) / max(b - a, 1e-3), 0, 1)
        new_tier = call("Create PitchTier", "new", 0.0, snd.duration)
        for ti, v in zip(pt, 100 * 2 ** (new / 12)):
            call(new_tier, "Add point", float(ti), float(v))
        call([manip, new_tier], "Replace pitch tier")

    dur = call("Create DurationTier", "dur", 0.0, snd.duration)
    base = 1.0 / plan.rate
    stretch: list[tuple[float, float, float]] = []
    if plan.focus is not None:
        stretch.append((*words[plan.focus], ACCENT_LENGTHEN))
    if plan.break_after is not None:
        stretch.append((*words[plan.break_after], PRE_BOUNDARY_LENGTHEN))
    call(dur, "Add point", 0.0, base)
    for a, b, k in sorted(stretch):
        for ti, v in ((a - 0.001, base), (a, base * k), (b, base * k), (b + 0.001, base)):
            call(dur, "Add point", float(max(ti, 0.0)), float(v))
    call(dur, "Add point", snd.duration, base)
    call([manip, dur], "Replace duration tier")
    out = call(manip, "Get resynthesis (overlap-add)")
    y = out.values[0]
    peak = np.max(np.abs(y))
    return (y / peak * 0.95 if peak > 0.95 else y).astype(np.float32)


ENGINES: dict[str, Engine] = {
    "espeak": Espeak("espeak", {"female": "en-us+f3", "male": "en-us"}),
    "festival": Festival("festival", {"female": "cmu_us_slt_arctic_hts", "male": "kal_diphone"}),
    "flite": Flite("flite", {"female": "slt", "male": "rms"}),
}


def available() -> list[str]:
    return [name for name, e in ENGINES.items() if e.available()]
