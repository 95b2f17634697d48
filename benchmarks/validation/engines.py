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

Voice sets with other voices (``festival-ked``: festival's ``ked_diphone`` male; ``awb`` and
``flite-kal``: flite's ``awb`` / ``kal`` male, each with an espeak-ng female variant, see
``VoiceSet``) add rotations whose voices the listener's first methods never met. ``pico`` adds
synthesisers no method was built with: SVOX Pico (``pico2wave``, its own prosody model and
voice; the plan by its own markup, ``Pico``) for the female, and an MBROLA diphone voice spoken
by festival (``us2_mbrola``) for the male. ``rhvoice`` is a synthesiser no method was built with
on both speakers: RHVoice's HTS voices (``clb``, ``bdl``; ``RHVoice``).

All need the Debian packages ``espeak-ng`` and ``festival`` (+ ``festvox-us-slt-hts``,
``festvox-kallpc16k``, ``festvox-kdlpc16k``) and ``flite``; ``pico`` needs
``libttspico-utils`` (non-free) and ``festvox-us2`` (contrib), ``rhvoice`` needs ``librhvoice5``
and ``rhvoice-english`` (non-free); ``available()`` says which are installed.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import soundfile as sf

from benchmarks.validation.sentences import Plan, Sentence

ACCENT_ST = 5.0  # pitch accent imposed on a focused word (PSOLA engines)
ACCENT_DB = 4.0
ACCENT_LENGTHEN = 1.35
BREAK_S = 0.32
PRE_BOUNDARY_LENGTHEN = 1.3
#: what a PSOLA engine's speech is turned down by before a plan's level is applied, the same
#: for every rendition of its voices (a recording chain at one fixed gain): room for the loudest
#: plan (anger's +6 dB, an accent's +4 dB) under full scale (``PsolaEngine.headroom_db``; RHVoice
#: leaves its own room by speaking at half its volume). Rendering v2/v3 instead scaled each file whose
#: peak passed 0.95 back to 0.95, on its own - which undid the plan's level in that file:
#: festival's ``ked_diphone`` speaks near full scale, and 73 of its 100 male references were
#: scaled (its authoritative rendition of one sentence, planned 4 dB louder than neutral, came
#: out within 0.25 dB of it), so a system copying the plan was louder than the references it copied. A rendering
#: that would still reach full scale is refused (``Clipped``), never rescaled.
HEADROOM_DB = 12.0
FULL_SCALE = 0.999


class Clipped(RuntimeError):
    """A rendering reached full scale: give the engine more headroom rather than rescale the
    file. Raised naming the engine, its voice and the sentence (``realistic_validation.py``
    reports it without a traceback)."""


@dataclass(frozen=True)
class Realisation:
    """How an engine realises a plan's focus and phrase break, and how much of the plan.

    The default is the references' own realisation (a raised, louder, longer focused word; a
    320 ms pause after a lengthened word). The validation families vary it one cue at a time
    (``families.REALISATIONS``): a system that realises the same intent its own way must be
    recognised too, and a listener that only matches the references' exact contour is not.

    ``native``: the engine's own markup instead (espeak-ng ``<emphasis>``; festival's SABLE
    ``<EMPH>``, honoured by its default diphone voice only; a comma for a phrase break, which
    every engine phrases its own way). ``dose`` scales every prosodic effect of the plan
    (0: none at all, 1: the whole plan)."""

    accent_st: float = ACCENT_ST
    fall: bool = False  # the accent as a fall (high at the word's onset, low at its end)
    accent_db: float = ACCENT_DB
    lengthen: float = ACCENT_LENGTHEN
    post_focus_range: float = 1.0  # < 1: the melody after the focused word is compressed
    break_s: float = BREAK_S
    pre_boundary_lengthen: float = PRE_BOUNDARY_LENGTHEN
    reset_st: float = 0.0  # F0 reset: the word after the boundary starts this much higher
    comma: bool = True  # espeak-ng: a break is also written as a comma (its own boundary)
    native: bool = False
    dose: float = 1.0

    def plan(self, plan: Plan) -> Plan:
        """``plan`` with its global effects scaled by ``dose``."""
        d = self.dose
        if d == 1.0:
            return plan
        if d == 0.0:
            return Plan()
        return Plan(plan.pitch_st * d, 1 + (plan.range_ - 1) * d, 1 + (plan.rate - 1) * d,
                    plan.gain_db * d, plan.final_st * d, plan.focus, plan.break_after,
                    plan.question)

    def scaled(self) -> "Realisation":
        """The focus and break cues scaled by ``dose`` (so a dosed rendering is one call)."""
        d = self.dose
        return Realisation(self.accent_st * d, self.fall, self.accent_db * d,
                           1 + (self.lengthen - 1) * d, 1 - (1 - self.post_focus_range) * d,
                           self.break_s * d, 1 + (self.pre_boundary_lengthen - 1) * d,
                           self.reset_st * d, self.comma, self.native, 1.0)


AS_PLANNED = Realisation()


@dataclass(frozen=True)
class Engine:
    name: str
    voices: dict[str, str]  # ADEPT speaker ("female"/"male") -> engine voice

    def available(self) -> bool:
        raise NotImplementedError

    def render_many(self, items: list[tuple[Sentence, Plan, str]], speaker: str,
                    how: Realisation = AS_PLANNED) -> list[tuple[np.ndarray, int]]:
        raise NotImplementedError

    def native_focus(self, speaker: str) -> bool:
        """Whether this engine's ``speaker`` voice honours focus markup of its own."""
        return False

    def can_fall(self) -> bool:
        """Whether it can realise an accent as a fall (only by imposing the contour)."""
        return False

    def can_compress(self) -> bool:
        """Whether it can narrow the melody after a focused word (post-focus compression)."""
        return True

    def program(self, speaker: str) -> str:
        """The synthesiser that speaks ``speaker`` (a rotation never has it on both sides)."""
        return type(self).__name__.lower()

    def one_voice(self) -> "Engine":
        """This engine with its male voice speaking for both speakers."""
        return replace(self, voices={"female": self.voices["male"], "male": self.voices["male"]})


def _percent(factor: float) -> str:
    return f"{(factor - 1) * 100:+.0f}%"


@dataclass(frozen=True)
class Espeak(Engine):
    def available(self) -> bool:
        return shutil.which("espeak-ng") is not None

    @staticmethod
    def ssml(sentence: Sentence, plan: Plan, how: Realisation = AS_PLANNED) -> str:
        plan, how = how.plan(plan), how.scaled()
        words = list(sentence.words)
        if plan.focus is not None:
            f = plan.focus
            if how.native:
                # espeak-ng's own emphasis: a nuclear fall from the voice's ordinary level on a
                # lengthened word (an emphasised first word comes out *lower* than unemphasised)
                words[f] = f"<emphasis>{words[f]}</emphasis>"
            else:
                if how.fall:
                    raise ValueError("espeak-ng cannot realise a falling accent by markup")
                # a local <prosody>: the plan's raised accent (sizes relative to the reference
                # realisation's +35% pitch, -25% rate, +4 dB)
                attrs = []
                if how.accent_st:
                    attrs.append(f'pitch="+{35 * how.accent_st / ACCENT_ST:.0f}%"')
                if how.lengthen != 1.0:
                    attrs.append(f'rate="-{25 * (how.lengthen - 1) / (ACCENT_LENGTHEN - 1):.0f}%"')
                if how.accent_db:
                    attrs.append(f'volume="+{how.accent_db:.0f}dB"')
                if attrs:
                    words[f] = f'<prosody {" ".join(attrs)}>{words[f]}</prosody>'
            if how.post_focus_range < 1.0 and f + 1 < len(words):
                words[f + 1] = (f'<prosody range="-{(1 - how.post_focus_range) * 100:.0f}%">'
                                + words[f + 1])
                words[-1] += "</prosody>"
        if plan.break_after is not None:
            b = plan.break_after
            if how.native:
                words[b] += ","  # the engine's own phrase break
            else:
                if not how.comma and how.pre_boundary_lengthen != 1.0:
                    words[b] = (f'<prosody rate="-{(1 - 1 / how.pre_boundary_lengthen) * 100:.0f}'
                                f'%">{words[b]}</prosody>')
                if how.comma:
                    words[b] += ","
                if how.break_s > 0:
                    words[b] += f' <break time="{int(round(how.break_s * 1000))}ms"/>'
                if how.reset_st and b + 1 < len(words):
                    words[b + 1] = (f'<prosody pitch="+{(2 ** (how.reset_st / 12) - 1) * 100:.0f}'
                                    f'%">{words[b + 1]}</prosody>')
        end = "?" if plan.question else "."
        body = " ".join(words) + end
        attrs = (f'pitch="{_percent(2 ** (plan.pitch_st / 12))}" range="{_percent(plan.range_)}" '
                 f'rate="{_percent(plan.rate)}" volume="{plan.gain_db:+.0f}dB"')
        return f"<speak><prosody {attrs}>{body}</prosody></speak>"

    def render_many(self, items, speaker, how: Realisation = AS_PLANNED):
        return _spoken([["espeak-ng", "-m", "-v", self.voices[speaker], "-w", "{wav}",
                         self.ssml(sentence, plan, how)] for sentence, plan, _ in items])


def _spoken(commands: list[list[str]]) -> list[tuple[np.ndarray, int]]:
    """Run each synthesiser command (``{wav}`` standing for the file it writes) and read back
    what it wrote."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        wav = str(Path(tmp) / "x.wav")
        for command in commands:
            subprocess.run([wav if arg == "{wav}" else arg for arg in command], check=True,
                           capture_output=True)
            x, rate = sf.read(wav, dtype="float32")
            out.append((x, rate))
    return out


@dataclass(frozen=True)
class Pico(Engine):
    """SVOX Pico (``pico2wave``), realising the plan by its own markup: ``<pitch>``,
    ``<speed>`` and ``<volume>`` levels (percent of its default) and ``<break>``.

    Pico's tags do not nest - closing one returns that quantity to the default, not to the
    enclosing level - so every word gets a span of its own carrying the absolute level it
    should have (the sentence's, times the accent's on a focused word); one span per word for
    every rendition, so that where the spans change never marks the focus by itself. Pico has
    no markup for pitch range, a final movement or emphasis: ``range_`` and ``final_st`` are
    not realised, post-focus compression and falls cannot be rendered, and its native focus
    is the planned one (its native phrase break is a comma, phrased its own way)."""

    #: the volume level every rendition starts from: Pico's 100 clips (peak 1.0 on a plain
    #: sentence), 30 peaks near 0.4 and leaves room for anger's +6 dB or an accent's +4 dB (no
    #: plan has both; both would clip, and a clipped rendering is refused)
    BASE_VOLUME = 30.0

    def available(self) -> bool:
        return shutil.which("pico2wave") is not None

    def can_compress(self) -> bool:
        return False

    @classmethod
    def markup(cls, sentence: Sentence, plan: Plan, how: Realisation = AS_PLANNED) -> str:
        plan, how = how.plan(plan), how.scaled()
        if how.fall:
            raise ValueError("Pico cannot realise a falling accent by markup")
        if how.post_focus_range < 1.0:
            raise ValueError("Pico cannot compress the melody after a focus: no range markup")
        n = len(sentence.words)
        pitch_st, slower, gain_db = [plan.pitch_st] * n, [1.0] * n, [plan.gain_db] * n
        after = [""] * n
        if plan.focus is not None:  # Pico has no emphasis of its own: native is as planned
            pitch_st[plan.focus] += how.accent_st
            slower[plan.focus] *= how.lengthen
            gain_db[plan.focus] += how.accent_db
        if plan.break_after is not None:
            b = plan.break_after
            if how.native or how.comma:
                after[b] = ","
            if not how.native:
                if not how.comma:  # with a comma, the lengthening is Pico's own (as espeak-ng)
                    slower[b] *= how.pre_boundary_lengthen
                if how.break_s > 0:
                    after[b] += f" <break time='{int(round(how.break_s * 1000))}ms'/>"
                if how.reset_st and b + 1 < n:
                    pitch_st[b + 1] += how.reset_st
        spans = []
        for i, word in enumerate(sentence.words):
            end = ("?" if plan.question else ".") if i == n - 1 else ""
            spans.append(f"<pitch level='{100 * 2 ** (pitch_st[i] / 12):.0f}'>"
                         f"<speed level='{100 * plan.rate / slower[i]:.0f}'>"
                         f"<volume level='{cls.BASE_VOLUME * 10 ** (gain_db[i] / 20):.0f}'>"
                         f"{word}{end}</volume></speed></pitch>{after[i]}")
        return " ".join(spans)

    def render_many(self, items, speaker, how: Realisation = AS_PLANNED):
        out = _spoken([["pico2wave", "-l", self.voices[speaker], "-w", "{wav}",
                        self.markup(sentence, plan, how)] for sentence, plan, _ in items])
        for (sentence, _, _), (x, _) in zip(items, out):
            if np.max(np.abs(x)) >= FULL_SCALE:
                raise Clipped(f"pico ({self.voices[speaker]}) reached full scale on "
                              f"{sentence.text!r}: lower Pico.BASE_VOLUME")
        return out


@dataclass(frozen=True)
class PsolaEngine(Engine):
    """An engine that speaks plain text and reports word timings; the plan is imposed after."""

    #: how far below its own level every rendition is put before the plan's (``HEADROOM_DB``)
    headroom_db = HEADROOM_DB

    def can_fall(self) -> bool:
        return True

    def plain(self, items: list[tuple[Sentence, Plan, str]], speaker: str,
              how: Realisation = AS_PLANNED
              ) -> list[tuple[np.ndarray, int, list[tuple[float, float]]]]:
        """(samples, rate, word (start, end) seconds) of each sentence spoken from plain text
        (``text``: with a comma at a native phrase break)."""
        raise NotImplementedError

    @staticmethod
    def text(sentence: Sentence, plan: Plan, how: Realisation = AS_PLANNED) -> str:
        words = list(sentence.words)
        if how.native and plan.break_after is not None:
            words[plan.break_after] += ","
        return " ".join(words) + ("?" if plan.question else ".")

    @staticmethod
    def imposed(plan: Plan, how: Realisation = AS_PLANNED) -> Plan:
        """What of ``plan`` PSOLA imposes on what the engine spoke: all of it, but natively
        the engine has phrased the break itself."""
        return replace(plan, break_after=None) if how.native else plan

    def render_many(self, items, speaker, how: Realisation = AS_PLANNED):
        items = [(sentence, how.plan(plan), key) for sentence, plan, key in items]
        cues = how.scaled()
        out = []
        for (sentence, plan, _), (x, rate, words) in zip(items, self.plain(items, speaker, how)):
            if len(words) != len(sentence.words):
                raise RuntimeError(f"{self.name} split {sentence.text!r} into {len(words)} words")
            plan = self.imposed(plan, how)
            try:
                with praat_seeded(self.name, self.voices[speaker], sentence.words, plan, cues):
                    out.append((impose(x.astype(np.float64), rate, words, plan, cues,
                                       self.headroom_db), rate))
            except Clipped as e:
                raise Clipped(f"{self.name} ({self.voices[speaker]}) {sentence.text!r}: {e} "
                              f"(at {self.headroom_db:g} dB of headroom: give "
                              f"{type(self).__name__} more)") from None
        return out


@dataclass(frozen=True)
class Festival(PsolaEngine):
    def available(self) -> bool:
        return set(self.voices.values()) <= _festival_voices()

    #: festival's default voice, the only one here whose accents follow SABLE ``<EMPH>``
    #: (``cmu_us_slt_arctic_hts`` ignores it, and SABLE mode resets the voice to the default)
    SABLE_VOICE = "kal_diphone"

    def native_focus(self, speaker: str) -> bool:
        return self.voices[speaker] == self.SABLE_VOICE

    def render_many(self, items, speaker, how: Realisation = AS_PLANNED):
        if not (how.native and self.native_focus(speaker)):
            return super().render_many(items, speaker, how)
        out = {}
        rest = [(i, it) for i, it in enumerate(items) if it[1].focus is None]
        for (i, _), result in zip(rest, super().render_many([it for _, it in rest], speaker,
                                                             how)):
            out[i] = result
        with tempfile.TemporaryDirectory() as tmp:
            for i, (sentence, plan, _) in enumerate(items):
                if plan.focus is None:
                    continue
                words = list(sentence.words)
                words[plan.focus] = f"<EMPH>{words[plan.focus]}</EMPH>"
                doc = Path(tmp) / "x.sable"
                doc.write_text('<?xml version="1.0"?>\n<!DOCTYPE SABLE PUBLIC "-//SABLE//DTD '
                               'SABLE speech mark up//EN" "Sable.v0_2.dtd" []>\n<SABLE>\n'
                               + " ".join(words) + ("?" if plan.question else ".")
                               + "\n</SABLE>\n")
                wav = Path(tmp) / "x.wav"
                subprocess.run(["text2wave", "-mode", "sable", str(doc), "-o", str(wav)],
                               check=True, capture_output=True)
                x, rate = sf.read(str(wav), dtype="float32")
                if np.max(np.abs(x)) >= FULL_SCALE:  # clipped by festival itself
                    raise Clipped(f"{self.name} ({self.voices[speaker]}) reached full scale "
                                  f"speaking SABLE {sentence.text!r}")
                # at the gain ``impose`` gives the sentence's other renditions
                out[i] = (x * np.float32(10 ** (-self.headroom_db / 20)), rate)
        return [out[i] for i in range(len(items))]

    def plain(self, items, speaker, how: Realisation = AS_PLANNED):
        """One festival process per batch: plain text, then word timings.

        A native phrase break is festival's own punctuation phrasing (``simple_phrase_cart_tree``,
        a break at every comma): these voices' default phrasing is a statistical model of where
        breaks fall that ignores some commas ("Peter, and Sue or Mark ..." is phrased after
        "Sue", not "Peter"), and a system that never realises a reading transfers nothing a
        listener could recognise. Every break asked for is checked to be phrased there."""
        voice = self.voices[speaker]
        with tempfile.TemporaryDirectory() as tmp:
            lines = [f"(voice_{voice})", "(set! phrase_cart_tree simple_phrase_cart_tree)",
                     "(set! voice_phrasing (Parameter.get 'Phrase_Method))"]
            for i, (sentence, plan, _) in enumerate(items):
                text = self.text(sentence, plan, how)
                by_comma = how.native and plan.break_after is not None
                lines.append("(Parameter.set 'Phrase_Method "
                             + ("'cart_tree)" if by_comma else "voice_phrasing)"))
                lines.append(f'(set! utt (SynthText "{text}"))')
                lines.append(f"(utt.save.wave utt \"{tmp}/{i}.wav\" 'riff)")
                lines.append(f'(format t "U {i}\\n")')
                lines.append('(mapcar (lambda (w) (format t "W %f %f %s\\n" '
                             '(item.feat w "word_start") (item.feat w "word_end") '
                             '(item.feat w "pbreak"))) '
                             "(utt.relation.items utt 'Word))")
            script = Path(tmp) / "batch.scm"
            script.write_text("\n".join(lines) + "\n")
            proc = subprocess.run(["festival", "-b", str(script)], check=True,
                                  capture_output=True, text=True)
            times: dict[int, list[tuple[float, float]]] = {}
            breaks: dict[int, list[str]] = {}
            current = -1
            for line in proc.stdout.splitlines():
                if line.startswith("U "):
                    current = int(line.split()[1])
                    times[current], breaks[current] = [], []
                elif line.startswith("W ") and current >= 0:
                    _, a, b, kind = line.split()
                    times[current].append((float(a), float(b)))
                    breaks[current].append(kind)
            out = []
            for i, (sentence, plan, _) in enumerate(items):
                b = plan.break_after
                if how.native and b is not None and b < len(breaks[i]) \
                        and breaks[i][b] not in ("B", "BB"):
                    raise RuntimeError(f"festival ({voice}) did not phrase "
                                       f"{self.text(sentence, plan, how)!r} at its comma")
                x, rate = sf.read(f"{tmp}/{i}.wav", dtype="float32")
                out.append((x, rate, times[i]))
        return out


@lru_cache(maxsize=1)
def _festival_voices() -> frozenset[str]:
    """The voices festival has installed (none without festival): each comes in a Debian
    package of its own."""
    if shutil.which("festival") is None:
        return frozenset()
    try:
        proc = subprocess.run(["festival", "-b", "(print (voice.list))"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    listed = [line for line in proc.stdout.splitlines() if line.startswith("(")]
    if proc.returncode != 0 or not listed:
        return frozenset()
    return frozenset(listed[-1].strip("()").split())


@dataclass(frozen=True)
class Flite(PsolaEngine):
    """flite speaks plain text and prints its segments' end times (``-psdur``); words are
    found by counting each word's segments (flite's own ``-ps`` on the word alone)."""

    def available(self) -> bool:
        return shutil.which("flite") is not None

    @staticmethod
    def _segments(voice: str, text: str, wav: str = "none") -> list[tuple[str, float]]:
        proc = subprocess.run(["flite", "-voice", voice, "-psdur", "-t", text, "-o", wav],
                              check=True, capture_output=True, text=True)
        out = []
        for item in proc.stdout.split():
            name, _, end = item.rpartition(":")
            out.append((name, float(end)))
        return out

    @staticmethod
    @lru_cache(maxsize=None)
    def _word_segments(voice: str, word: str) -> int:
        """How many segments ``voice`` speaks ``word`` alone in (asked once per process: the
        benchmark renders the same few hundred words again for every family)."""
        return sum(n != "pau" for n, _ in Flite._segments(voice, word))

    def plain(self, items, speaker, how: Realisation = AS_PLANNED):
        voice = self.voices[speaker]
        out = []
        with tempfile.TemporaryDirectory() as tmp:
            wav = str(Path(tmp) / "x.wav")
            for sentence, plan, _ in items:
                text = self.text(sentence, plan, how)
                phones = self._segments(voice, text, wav)
                x, rate = sf.read(wav, dtype="float32")
                words, start, k = [], 0.0, 0
                for w in sentence.words:
                    # skip pauses before a word (leading, or at a comma); each word takes as
                    # many segments as it has alone
                    while k < len(phones) and phones[k][0] == "pau":
                        start = phones[k][1]
                        k += 1
                    end_k = k + self._word_segments(voice, w.strip(".,?!;:"))
                    if end_k > len(phones) or any(n == "pau" for n, _ in phones[k:end_k]):
                        raise RuntimeError(f"flite: cannot find the words of {text!r}")
                    words.append((start, phones[end_k - 1][1]))
                    start, k = phones[end_k - 1][1], end_k
                if any(n != "pau" for n, _ in phones[k:]):
                    raise RuntimeError(f"flite: cannot find the words of {text!r}")
                out.append((x, rate, words))
        return out


@dataclass(frozen=True)
class RHVoice(PsolaEngine):
    """RHVoice (HTS statistical parametric voices; its own text analysis, phrasing, durations and
    melody) through its C library (``_rhvoice``: samples and word times).

    As flite and festival, it speaks the plain text and the plan is imposed with PSOLA - RHVoice
    reads ``<prosody>`` for a whole sentence only (a word's own pitch, rate or volume is
    ignored: measured, the audio came out identical). Its native realisation speaks the
    sentence's level, rate and loudness by its own ``<prosody>`` (how its voice model realises
    a higher, slower, louder sentence) and the phrase break by a comma; the focus, the range and
    the final movement are then imposed as planned."""

    #: RHVoice's female voice peaks near 0.9 at its default volume; every rendition is spoken at
    #: half of it, leaving room for anger's +6 dB (a clipped rendering is refused): that is its
    #: headroom, and no more is taken (12 dB more put its renditions of sadness, 20 dB quieter
    #: in the ``quiet-20db`` delivery, under the level a file is refused as silent at)
    BASE_VOLUME = 0.5
    headroom_db = 0.0
    #: the volumes RHVoice realises as asked (measured: it holds anything under 0.25 at 0.25,
    #: and above 1.0 it limits its peaks); the rest of a plan's level is a digital gain
    VOLUME_RANGE = (0.25, 1.0)

    def available(self) -> bool:
        from benchmarks.validation import _rhvoice

        return all(_rhvoice.installed(v) for v in self.voices.values())

    @classmethod
    def volume(cls, plan: Plan, how: Realisation = AS_PLANNED) -> tuple[float, float]:
        """(the volume RHVoice speaks at, the gain applied to what it speaks) for ``plan``'s
        level: natively RHVoice's own volume within ``VOLUME_RANGE``, the remainder digital."""
        wanted = cls.BASE_VOLUME * 10 ** ((plan.gain_db if how.native else 0.0) / 20)
        spoken = min(max(wanted, cls.VOLUME_RANGE[0]), cls.VOLUME_RANGE[1])
        return spoken, wanted / spoken

    @classmethod
    def ssml(cls, sentence: Sentence, plan: Plan, how: Realisation = AS_PLANNED) -> str:
        """The SSML RHVoice speaks: plain text (native: the sentence's level, rate and loudness
        as its own ``<prosody>``, and a comma at the phrase break)."""
        text = cls.text(sentence, plan, how)
        volume, _ = cls.volume(plan, how)
        if not how.native:
            plan = Plan()
        return (f'<speak><prosody pitch="{_percent(2 ** (plan.pitch_st / 12))}" '
                f'rate="{_percent(plan.rate)}" volume="{_percent(volume)}">{text}'
                "</prosody></speak>")

    @staticmethod
    def imposed(plan: Plan, how: Realisation = AS_PLANNED) -> Plan:
        """Natively RHVoice has spoken the sentence's level, rate and loudness and phrased the
        break: PSOLA imposes the rest (the focus, the range, the final movement)."""
        if not how.native:
            return plan
        return replace(plan, pitch_st=0.0, rate=1.0, gain_db=0.0, break_after=None)

    def plain(self, items, speaker, how: Realisation = AS_PLANNED):
        from benchmarks.validation import _rhvoice

        out = []
        for sentence, plan, _ in items:
            ssml = self.ssml(sentence, plan, how)
            spoken = _rhvoice.speak(ssml, self.voices[speaker])
            if len(spoken.words) != len(sentence.words):
                raise RuntimeError(f"RHVoice split {sentence.text!r} into "
                                   f"{len(spoken.words)} words")
            x = spoken.samples * np.float32(self.volume(plan, how)[1])
            if np.max(np.abs(x)) >= FULL_SCALE:
                raise Clipped(f"{self.name} ({self.voices[speaker]}) reached full scale on "
                              f"{ssml!r}: lower RHVoice.BASE_VOLUME")
            out.append((x, spoken.rate, _rhvoice.word_times(spoken)))
        return out


@contextmanager
def praat_seeded(*key: object):
    """Praat's random numbers seeded from ``key`` inside the block. Praat's overlap-add
    resynthesis gives voiceless stretches random period lengths, so the same call rendered
    different audio every time (and a benchmark's figures moved by a question or two between
    renderings); seeded, a rendering is a function of what it renders. Not re-entrant: leaving
    the block reseeds Praat unpredictably, whatever was seeded before it."""
    from parselmouth.praat import run

    seed = int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:4], "big") % 2 ** 31
    run(f"random_initializeWithSeedUnsafelyButPredictably ({seed})")
    try:
        yield
    finally:
        run("random_initializeSafelyAndUnpredictably ()")


def _ramp_mask(t: np.ndarray, a: float, b: float, edge: float = 0.03) -> np.ndarray:
    """1 inside [a, b], 0 outside, with raised-cosine edges of ``edge`` seconds."""
    up = np.clip((t - (a - edge)) / edge, 0, 1)
    down = np.clip(((b + edge) - t) / edge, 0, 1)
    m = np.minimum(up, down)
    return 0.5 - 0.5 * np.cos(np.pi * m)


# A tier's points pass through Praat's own text format, not one ``call`` per point: a call
# costs ~0.25 ms and a sentence's tier has ~150 points read twice and written once (half of
# the validation benchmark's rendering time went there). Praat writes 17 significant digits
# and reads them back exactly, so the renderings are bit for bit what per-point calls gave.
def _tier_points(tier) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) of a Praat tier's points."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "tier.txt")
        tier.save_as_short_text_file(path)
        lines = Path(path).read_text().split("\n")
    # short text: type, class, a blank line, xmin, xmax, the number of points, then t, v pairs
    n = int(lines[5])
    values = np.array(lines[6:6 + 2 * n], dtype=float).reshape(n, 2)
    return values[:, 0], values[:, 1]


def _pitch_tier(times: np.ndarray, hz: np.ndarray, duration: float):
    """A Praat PitchTier from 0 to ``duration`` s with these points."""
    import parselmouth

    body = "\n".join(f"{float(t)!r}\n{float(v)!r}" for t, v in zip(times, hz))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tier.txt"
        path.write_text(f'File type = "ooTextFile"\nObject class = "PitchTier"\n\n0\n'
                        f"{float(duration)!r}\n{len(times)}\n{body}\n")
        return parselmouth.read(str(path))


def impose(x: np.ndarray, rate: int, words: list[tuple[float, float]], plan: Plan,
           how: Realisation = AS_PLANNED, headroom_db: float = HEADROOM_DB) -> np.ndarray:
    """Impose ``plan`` on plain synthetic speech with known word timings (PSOLA, gain, pauses),
    its focus and break realised as ``how`` says (already scaled: ``Realisation.scaled``), at
    ``headroom_db`` under the speech's own level."""
    import parselmouth
    from parselmouth.praat import call

    words = [tuple(w) for w in words]
    if plan.break_after is not None and how.break_s > 0:  # a pause after the word
        cut = words[plan.break_after][1]
        k = int(cut * rate)
        x = np.concatenate([x[:k], np.zeros(int(how.break_s * rate)), x[k:]])
        words = [(a + how.break_s, b + how.break_s) if a >= cut - 1e-6 else (a, b)
                 for a, b in words]
    t = np.arange(len(x)) / rate
    gain = np.full(len(x), plan.gain_db - headroom_db)
    if plan.focus is not None and how.accent_db:
        a, b = words[plan.focus]
        gain += how.accent_db * _ramp_mask(t, a, b)
    x = x * 10 ** (gain / 20)

    snd = parselmouth.Sound(x, rate)
    manip = call(snd, "To Manipulation", 0.01, 60, 500)
    tier = call(manip, "Extract pitch tier")
    pt, hz = _tier_points(tier)
    if len(pt):
        st = 12 * np.log2(hz / 100)
        med = np.median(st)
        new = med + plan.pitch_st + plan.range_ * (st - med)
        if plan.focus is not None:
            a, b = words[plan.focus]
            if how.post_focus_range < 1.0:  # the melody after the focus flattened
                after = np.clip((pt - b) / 0.05, 0, 1)
                base = med + plan.pitch_st
                new = new - after * (1 - how.post_focus_range) * (new - base)
            if how.fall:  # high at the word's onset, falling below the line by its end
                along = np.clip((pt - a) / max(b - a, 1e-3), 0, 1)
                new += 0.6 * how.accent_st * (1 - 2 * along) * _ramp_mask(pt, a, b, 0.05)
            else:
                new += how.accent_st * _ramp_mask(pt, a, b, 0.05)
        if plan.break_after is not None and how.reset_st and plan.break_after + 1 < len(words):
            a, b = words[plan.break_after + 1]  # F0 reset: the next phrase starts high
            along = np.clip((pt - a) / max(b - a, 1e-3), 0, 1)
            new += how.reset_st * (1 - along) * _ramp_mask(pt, a, b, 0.03)
        if plan.final_st:
            a, b = words[-1]
            new += plan.final_st * np.clip((pt - a) / max(b - a, 1e-3), 0, 1)
        call([manip, _pitch_tier(pt, 100 * 2 ** (new / 12), snd.duration)],
             "Replace pitch tier")

    dur = call("Create DurationTier", "dur", 0.0, snd.duration)
    base = 1.0 / plan.rate
    stretch: list[tuple[float, float, float]] = []
    if plan.focus is not None and how.lengthen != 1.0:
        stretch.append((*words[plan.focus], how.lengthen))
    if plan.break_after is not None and how.pre_boundary_lengthen != 1.0:
        stretch.append((*words[plan.break_after], how.pre_boundary_lengthen))
    call(dur, "Add point", 0.0, base)
    for a, b, k in sorted(stretch):
        for ti, v in ((a - 0.001, base), (a, base * k), (b, base * k), (b + 0.001, base)):
            call(dur, "Add point", float(max(ti, 0.0)), float(v))
    call(dur, "Add point", snd.duration, base)
    call([manip, dur], "Replace duration tier")
    out = call(manip, "Get resynthesis (overlap-add)")
    y = out.values[0]
    if np.max(np.abs(y)) >= FULL_SCALE:
        raise Clipped(f"a rendering with {plan} reached full scale")
    return y.astype(np.float32)


@dataclass(frozen=True)
class VoiceSet(Engine):
    """Each ADEPT speaker spoken by an engine of its own (``parts``: speaker -> engine whose
    voice for that speaker speaks it). festival and flite have one female English voice between
    them (the same speaker, ``slt``), so a rotation with new voices on both sides borrows its
    female voice from espeak-ng."""

    parts: dict[str, Engine]

    def available(self) -> bool:
        return all(e.available() for e in self.parts.values())

    def render_many(self, items, speaker, how: Realisation = AS_PLANNED):
        return self.parts[speaker].render_many(items, speaker, how)

    def native_focus(self, speaker: str) -> bool:
        return self.parts[speaker].native_focus(speaker)

    def can_fall(self) -> bool:
        return all(e.can_fall() for e in self.parts.values())

    def can_compress(self) -> bool:
        return all(e.can_compress() for e in self.parts.values())

    def program(self, speaker: str) -> str:
        return self.parts[speaker].program(speaker)

    def one_voice(self) -> "Engine":
        return self.parts["male"].one_voice()


def voice_set(name: str, female: Engine, male: Engine) -> VoiceSet:
    """The female speaker by ``female``'s female voice, the male by ``male``'s male voice."""
    parts = {"female": female, "male": male}
    return VoiceSet(name, {sp: f"{e.name}:{e.voices[sp]}" for sp, e in parts.items()}, parts)


ENGINES: dict[str, Engine] = {
    "espeak": Espeak("espeak", {"female": "en-us+f3", "male": "en-us"}),
    "festival": Festival("festival", {"female": "cmu_us_slt_arctic_hts", "male": "kal_diphone"}),
    "flite": Flite("flite", {"female": "slt", "male": "rms"}),
    # voices the listener met in none of the first three engines' rotations: festival's other
    # diphone voice (``ked``), flite's Scottish ``awb`` and its ``kal``; the last two speak the
    # female with an espeak-ng variant (see ``VoiceSet``)
    "festival-ked": Festival("festival-ked", {"female": "cmu_us_slt_arctic_hts",
                                              "male": "ked_diphone"}),
    "awb": voice_set("awb", female=Espeak("espeak-rp", {"female": "en-gb-x-rp+f4"}),
                     male=Flite("flite-awb", {"male": "awb"})),
    "flite-kal": voice_set("flite-kal", female=Espeak("espeak-f5", {"female": "en-us+f5"}),
                           male=Flite("flite-kal", {"male": "kal"})),
    # two synthesisers no listener version met while it was built (Debian non-free and
    # contrib): SVOX Pico's own prosody and voice for the female, an MBROLA diphone voice
    # (us2) spoken through festival for the male
    "pico": voice_set("pico", female=Pico("pico", {"female": "en-US"}),
                      male=Festival("festival-mbrola", {"male": "us2_mbrola"})),
    # a synthesiser no listener version met, for both speakers (Debian non-free): RHVoice's
    # HTS voices of two CMU ARCTIC speakers no other voice set uses
    "rhvoice": RHVoice("rhvoice", {"female": "clb", "male": "bdl"}),
}


def check_rotation(reference: str, system: str) -> None:
    """Refuse a rotation whose references and systems are not two known voice sets spoken, for
    each speaker, by different synthesisers (a listener would then hear the engine, not the
    transfer)."""
    unknown = [name for name in (reference, system) if name not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {unknown[0]!r} (known: {', '.join(ENGINES)})")
    same = [sp for sp in ("female", "male")
            if ENGINES[reference].program(sp) == ENGINES[system].program(sp)]
    if same:
        raise ValueError(f"{reference}:{system}: references and systems must come from "
                         f"different engines ({same[0]} speaker: both "
                         f"{ENGINES[system].program(same[0])})")


#: the Debian packages each voice set needs; ``NOT_IN_MAIN`` are in Debian's non-free
#: (``libttspico-utils``, ``librhvoice5``, ``rhvoice-english``) and contrib (``festvox-us2``)
#: components, to be enabled in apt's sources
NOT_IN_MAIN = frozenset({"libttspico-utils", "festvox-us2", "librhvoice5", "rhvoice-english"})
DEBIAN_PACKAGES: dict[str, tuple[str, ...]] = {
    "espeak": ("espeak-ng",),
    "festival": ("festival", "festvox-us-slt-hts", "festvox-kallpc16k"),
    "flite": ("flite",),
    "festival-ked": ("festival", "festvox-us-slt-hts", "festvox-kdlpc16k"),
    "awb": ("espeak-ng", "flite"),
    "flite-kal": ("espeak-ng", "flite"),
    "pico": ("libttspico-utils", "festival", "festvox-us2"),
    "rhvoice": ("librhvoice5", "rhvoice-english"),
}


def available() -> list[str]:
    return [name for name, e in ENGINES.items() if e.available()]


def install_hint(names) -> str:
    """What to install for the voice sets ``names`` (to say so when one is missing)."""
    packages = sorted({p for n in names for p in DEBIAN_PACKAGES.get(n, ())})
    nonfree = " (enable contrib and non-free)" if NOT_IN_MAIN & set(packages) else ""
    return f"Debian: apt-get install {' '.join(packages)}{nonfree}"
