"""Which participant hears what: a built test, its blinded audio, and each participant's plan.

``build_test`` writes a self-contained test folder:

    test.json     the design: tasks, systems, every question (as ``adept_eval.corpora.questions`` builds
                  it), the token of every audio file, headphone-check key, completion codes
    audio/        every file a participant may hear, named by an opaque random token (no class,
                  subcategory, sentence or system in any name), re-encoded from the system's
                  file to one format for all (``BLIND_RATE`` Hz, 16-bit PCM, mono WAV, no
                  metadata chunk), so neither a file's header nor a tag tells systems apart

``plan_for`` turns the design into one participant's list of items: the tasks in a random order,
each task heard in one system (systems rotate over participants in arrival order, so each task
is heard equally often in each system), the task's questions in a random order with catch trials
mixed in, and for multi-stimulus questions the samples in a random order. The random generator
is seeded by the test's seed and the participant id, and the plan is stored with the participant,
so it never changes once drawn.

Catch trials (attention checks) replace one sample of a multi-stimulus question by a beep and ask
which sample is the beep; in single-stimulus tasks the sample is a beep and the question asks
what it is. Both have one unambiguous answer. Each beep lasts as long as a stimulus of its task
drawn at random, so in the one shared format its file has a stimulus's size: the size of a file
does not give a catch trial away. With ``match_loudness`` every stimulus is brought to the same
speech level (and the test's ``loudness`` says so).

The headphone check is the anti-phase test of Woods, Siegel, Traer & McDermott (2017, Attention,
Perception & Psychophysics 79:2064-2072): each trial plays three 200 Hz tones, one 6 dB quieter,
one in anti-phase between the ears (quieter over loudspeakers, where the channels cancel, but not
over headphones); the listener picks the quietest. Six trials, pass with at least five correct.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from adept_eval import __version__
from adept_eval.corpora import spec
from adept_eval.corpora.corpus import Corpus
from adept_eval.errors import UserError
from adept_eval.corpora.questions import LETTERS, Question, build_questions
from adept_eval.listening_test.store import DB_FILE

if TYPE_CHECKING:
    from adept_eval.results.runs import Run

FORMAT = 1
CONFIG_FILE = "test.json"
#: the lowest speech level ``match_loudness`` takes, in dBFS (below it a test is all but silent)
MIN_LOUDNESS = -70.0
AUDIO_DIR = "audio"
NATURAL = "natural"

HEADPHONE_TRIALS = 6
HEADPHONE_PASS = 5
HEADPHONE_RATE = 22050
CATCH_MULTI_WORDING = "Attention check: in which sample do you hear a beep instead of speech?"
CATCH_SINGLE_WORDING = "Attention check: what do you hear in this sample?"
CATCH_SINGLE_CHOICES = ("A beep (a pure tone), no speech", "A person speaking a sentence")
AUDIO_TYPES = {".wav": "audio/wav", ".flac": "audio/flac", ".mp3": "audio/mpeg",
               ".ogg": "audio/ogg"}


class DesignError(UserError, ValueError):
    """The test cannot be built (unknown task, missing samples...); the message says why."""


@dataclass(frozen=True)
class TestConfig:
    """A built listening test, as stored in ``test.json`` (everything the server needs)."""

    title: str
    seed: int
    tasks: tuple[str, ...]
    systems: tuple[str, ...]
    questions: dict  # question_id -> Question as a dict
    samples: dict  # system -> stimulus_id -> audio token
    files: dict  # audio token -> file name inside audio/
    catch_per_task: int
    catch_tokens: tuple[str, ...]  # beeps, one per catch trial slot
    headphone_tokens: tuple[str, ...]
    headphone_answers: tuple[int, ...]  # index (0-2) of the quietest tone per trial: private
    calibration_token: str
    completion_code: str
    screenout_code: str
    completion_url: str = ""
    min_catch_correct: float = 1.0  # share of catch trials a participant must get right
    corpus_sha256: str = ""
    adept_eval_version: str = ""
    created: str = ""
    format: int = FORMAT
    sources: dict = field(default_factory=dict)  # system -> where its samples came from
    loudness: str = "as each system produced it"  # or how stimuli were matched in level

    def question(self, question_id: str) -> Question:
        d = dict(self.questions[question_id])
        for k in ("stimuli", "stimulus_subcategories", "choices", "choice_subcategories"):
            d[k] = tuple(d[k])
        return Question(**d)

    def task_questions(self, task: str) -> list[Question]:
        """The task's questions in the design's order (a new list: callers shuffle it)."""
        return list(self._questions_by_task.get(task, ()))

    @cached_property
    def _questions_by_task(self) -> dict[str, tuple[Question, ...]]:
        # parsed once per loaded design: every arriving participant's plan draws from them
        by_task: dict[str, list[Question]] = {}
        for q, d in self.questions.items():
            by_task.setdefault(d["task"], []).append(self.question(q))
        return {t: tuple(qs) for t, qs in by_task.items()}

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "TestConfig":
        if d.get("format") != FORMAT:
            raise DesignError(f"test format {d.get('format')!r} is not {FORMAT}; rebuild the test")
        d = dict(d)
        for k in ("tasks", "systems", "catch_tokens", "headphone_tokens", "headphone_answers"):
            d[k] = tuple(d[k])
        return cls(**d)


def load_test(folder: str | Path) -> TestConfig:
    path = Path(folder) / CONFIG_FILE
    if not path.exists():
        raise DesignError(f"{path}: no listening test here (build one with "
                          "`adept-eval listening-test build`)")
    try:
        return TestConfig.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise DesignError(f"{path}: unreadable test design ({exc})") from None


# ----------------------------------------------------------------------------- building
def _tone(freq: float, seconds: float, rate: int, ramp: float = 0.1) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    x = np.sin(2 * np.pi * freq * t)
    n = int(ramp * rate)
    env = np.ones_like(x)
    env[:n] = np.sin(np.linspace(0, np.pi / 2, n)) ** 2
    env[-n:] = env[:n][::-1]
    return x * env


def headphone_trial(quiet_at: int, antiphase_at: int, rate: int = HEADPHONE_RATE) -> np.ndarray:
    """One anti-phase trial as stereo samples: three 1 s 200 Hz tones, 0.5 s apart; the tone at
    ``quiet_at`` is 6 dB down, the one at ``antiphase_at`` has its right channel inverted."""
    tone = _tone(200.0, 1.0, rate) * 0.3
    gap = np.zeros((int(0.5 * rate), 2))
    parts = []
    for i in range(3):
        left = tone * (10 ** (-6 / 20) if i == quiet_at else 1.0)
        right = -left if i == antiphase_at else left
        parts += [np.stack([left, right], axis=1)] + ([gap] if i < 2 else [])
    return np.concatenate(parts).astype(np.float32)


def _write(audio_dir: Path, data: np.ndarray, rate: int) -> str:
    token = secrets.token_hex(12)  # hex: no word can turn up in a name by chance
    sf.write(str(audio_dir / f"{token}.wav"), data, rate, subtype="PCM_16", format="WAV")
    return token


#: the one format every served file has (ADEPT's own rate)
BLIND_RATE = 44100


def speech_level_db(x: np.ndarray, rate: int) -> float:
    """RMS level (dBFS) of the 20 ms frames within 35 dB of the loudest: the speech, not the
    silence around it (so edge silence does not lower a sample's level)."""
    hop = max(1, int(0.02 * rate))
    n = len(x) // hop
    if n == 0:
        return float("-inf")
    energy = np.mean(x[: n * hop].reshape(n, hop).astype(np.float64) ** 2, axis=1)
    db = 10 * np.log10(energy + 1e-12)
    active = energy[db > db.max() - 35.0]
    return float(10 * np.log10(np.mean(active) + 1e-12))


def _blinded(path: Path, target_db: float | None) -> np.ndarray:
    """A system's sample as served: mono, at ``BLIND_RATE``, optionally at ``target_db``
    speech level (lowered as a whole if that would clip)."""
    from adept_eval.signal.audio import read_audio, resample

    x = resample(read_audio(path), BLIND_RATE).samples.astype(np.float64)
    if target_db is not None:
        x = x * 10 ** ((target_db - speech_level_db(x, BLIND_RATE)) / 20)
        peak = float(np.max(np.abs(x))) if x.size else 0.0
        if peak > 0.99:
            x = x * (0.99 / peak)
    return x.astype(np.float32)


def _source_files(corpus: Corpus, systems: dict[str, str | Path | None],
                  stimuli: list[str]) -> dict[str, dict[str, Path]]:
    """system -> stimulus_id -> the file to serve; missing or unusable samples stop the build."""
    from adept_eval.corpora.manifest import check_folder

    out: dict[str, dict[str, Path]] = {}
    for name, folder in systems.items():
        if folder is None:
            out[name] = {s: Path(corpus.get(s).audio_path) for s in stimuli}
            continue
        folder = Path(folder)
        if is_lm_eval_run(folder):
            out[name] = _run_files(corpus, name, lm_eval_run(folder, name)[0], stimuli)
            continue
        if not folder.is_dir():
            raise DesignError(f"system {name!r}: {folder} is not a folder")
        check = check_folder(corpus, folder, stimuli=stimuli, progress=False)
        bad = [p.message for p in check.errors]
        if bad:
            shown = bad[:30] + ([f"... {len(bad) - 30} more"] if len(bad) > 30 else [])
            raise DesignError(f"system {name!r}: {len(bad)} samples are missing or unusable; "
                              "fix them before building a listening test:\n  " + "\n  ".join(shown))
        out[name] = {s: Path(check.samples[s].path) for s in stimuli}
    return out


def is_lm_eval_run(source: Path) -> bool:
    """Whether a system's source is an lm-eval run (its ``results_*.json``, or an
    ``--output_path`` folder holding runs) rather than a samples folder in ADEPT's layout."""
    source = Path(source)
    if source.is_file():
        return source.name.startswith("results") and source.suffix == ".json"
    return source.is_dir() and not any((source / c).is_dir() for c in spec.CLASSES) and \
        any(source.rglob("results_*.json"))


def lm_eval_run(source: Path, name: str | None = None) -> tuple["Run", str]:
    """The run a system's source names, and how it was chosen, to print.

    A ``results_*.json`` is that run. An ``--output_path`` folder may hold runs of several
    systems (lm-eval writes each model's runs beside the others'): building took the newest of
    them all without a word, so participants could hear another system than the one meant.
    One source is one system of the test, as a samples folder is, so a folder holding runs of
    several systems is refused, naming them and the source that names each; turning them into
    several systems on its own would change the test's design (each task rotates over every
    system, so each system gets fewer participants) behind the user's back. Among runs of one
    system the newest is taken, and the note says which and among how many."""
    from adept_eval.errors import PublishError
    from adept_eval.results.runs import find_runs, load_run

    source = Path(source)
    label = f"system {name!r}: " if name else ""
    try:
        if source.is_file():
            return load_run(source), str(source)
        runs = find_runs([source])
    except PublishError as exc:
        raise DesignError(f"{label}{exc}") from None
    by_system: dict[str, list] = {}
    for run in runs:
        by_system.setdefault(run.system, []).append(run)
    if len(by_system) > 1:
        import shlex

        named = " ".join(shlex.quote(f"{system_name(s)}={_where(s, by_system)}")
                         for s in sorted(by_system))
        raise DesignError(f"{label}{source} holds lm-eval runs of {len(by_system)} systems "
                          f"({', '.join(sorted(by_system))}); a system of the test is one "
                          f"system's run: name each to hear, e.g. {named}")
    ((system, own),) = by_system.items()
    chosen = max(own, key=lambda r: r.when)
    note = str(chosen.results_path)
    if len(own) > 1:
        note += (f" (the newest of {len(own)} runs of {system} in {source}; name another "
                 "run's results_*.json to use it)")
    return chosen, note


def system_name(system: str) -> str:
    """A run's own system name as a test's system name (no path separators or new lines)."""
    import re

    return re.sub(r"[/\\\n]+", "__", system).strip() or "system"


def _where(system: str, by_system: dict[str, list]) -> Path:
    """What names one system's runs in a folder holding several systems': the folder holding
    all its runs when no other system's run is in it (lm-eval's --output_path/<model>/), else
    its newest run's results file."""
    import os

    own = by_system[system]
    folder = Path(os.path.commonpath([r.results_path.parent for r in own]))
    others = [r for s, runs in by_system.items() if s != system for r in runs]
    if not any(folder in r.results_path.parents for r in others):
        return folder
    return max(own, key=lambda r: r.when).results_path


def _run_files(corpus: Corpus, name: str, run: "Run", stimuli: list[str]) -> dict[str, Path]:
    """The audio an lm-eval run of any system logged (``--output_path`` with ``--log_samples``),
    checked like a samples folder."""
    from adept_eval.signal.audio import check_audio
    from adept_eval.errors import PublishError
    from adept_eval.results.runs import audio_files

    folder = run.results_path
    try:
        files = audio_files(run)
    except PublishError as exc:
        raise DesignError(f"system {name!r}: {exc}") from None
    bad = []
    for sid in stimuli:
        path = files.get(sid)
        if path is None or not path.is_file():
            bad.append(f"{sid}: no usable sample logged in the run "
                       "(run lm_eval with --log_samples over these tasks)")
            continue
        report = check_audio(path, reference_duration=sf.info(corpus.get(sid).audio_path).duration)
        bad += [p.message for p in report.problems if p.severity == "error"]
    if bad:
        shown = bad[:30] + ([f"... {len(bad) - 30} more"] if len(bad) > 30 else [])
        raise DesignError(f"system {name!r} ({folder}, an lm-eval run): {len(bad)} samples are "
                          "missing or unusable:\n  " + "\n  ".join(shown))
    return {sid: files[sid] for sid in stimuli}


def check_new_folder(out: str | Path) -> None:
    """Refuse to build a test in ``out`` when it holds a test or a responses database already."""
    out = Path(out)
    if (out / CONFIG_FILE).exists():
        raise DesignError(f"{out} already holds a listening test; choose another folder "
                          "(a test's design never changes once participants may have seen it)")
    if (out / DB_FILE).exists():
        # another test's responses: a new design over them made every later report, status
        # and export fail on their question ids
        raise DesignError(f"{out / DB_FILE}: {out} already holds a responses database (another "
                          "test's answers); build the test in another folder, or move the "
                          "database away first")


def build_test(corpus: Corpus, out: str | Path, systems: dict[str, str | Path | None], *,
               tasks: list[str] | None = None, title: str = "ADEPT listening test",
               seed: int | None = None, catch_per_task: int = 1, min_catch_correct: float = 1.0,
               completion_code: str | None = None, screenout_code: str | None = None,
               completion_url: str = "", match_loudness: float | None = None) -> TestConfig:
    """Write a test folder for ``systems`` (name -> samples folder, or None for ADEPT's natural
    recordings) over ``tasks`` (default: all 12) and return its design. ``match_loudness``
    (dBFS, e.g. -23) brings every stimulus to that speech level."""
    tasks = list(tasks or spec.TASKS)
    for t in tasks:
        try:
            spec.task(t)
        except KeyError as exc:
            raise DesignError(exc.args[0]) from None
    if not systems:
        raise DesignError("a listening test needs at least one system")
    for name in systems:
        if not name or any(c in name for c in "/\\\n"):
            raise DesignError(f"system name {name!r}: use letters, digits, '-', '_' or '.'")
    if catch_per_task < 0:
        raise DesignError("catch_per_task must be 0 or more")
    if not 0 <= min_catch_correct <= 1:  # a share: above 1 no participant could be included
        raise DesignError(f"min_catch_correct={min_catch_correct}: a share of the attention "
                          "checks, from 0 to 1")
    if match_loudness is not None and not (math.isfinite(match_loudness)
                                           and MIN_LOUDNESS <= match_loudness < 0):
        # NaN made every stimulus full-scale noise; 0 dBFS or above cannot be reached without
        # clipping, so each stimulus would be lowered on its own and not matched at all; -200
        # built a silent test without a word
        raise DesignError(f"match_loudness={match_loudness}: a speech level in dBFS below 0 "
                          f"(full scale) and at least {MIN_LOUDNESS:g}, e.g. -23")
    out = Path(out)
    check_new_folder(out)
    # an lm-eval run folder as the run it holds, so the test records the very run heard
    systems = {n: lm_eval_run(Path(f), n)[0].results_path
               if f is not None and is_lm_eval_run(Path(f)) else f for n, f in systems.items()}
    questions = [q for t in tasks for q in build_questions(corpus, t)]
    stimuli = sorted({s for q in questions for s in q.stimuli})
    sources = _source_files(corpus, systems, stimuli)

    audio_dir = out / AUDIO_DIR
    audio_dir.mkdir(parents=True, exist_ok=True)
    files, samples, durations = {}, {}, {}
    for name, by_stim in sources.items():
        samples[name] = {}
        for sid, path in by_stim.items():
            x = _blinded(path, match_loudness)
            token = _write(audio_dir, x, BLIND_RATE)
            files[token] = f"{token}.wav"
            samples[name][sid] = token
            durations.setdefault(sid, len(x))
    rng = random.Random(seed)
    catch_tokens = []
    for t in tasks:  # in the order plan_for reads them: task by task, catch_per_task each
        lengths = sorted({durations[s] for q in questions if q.task == t for s in q.stimuli})
        for _ in range(catch_per_task):
            n = rng.choice(lengths)
            beep = _tone(1000.0, (n + 0.5) / BLIND_RATE, BLIND_RATE, ramp=0.02) * 0.2
            token = _write(audio_dir, beep[:n], BLIND_RATE)
            files[token] = f"{token}.wav"
            catch_tokens.append(token)
    hp_tokens, hp_answers = [], []
    for _ in range(HEADPHONE_TRIALS):
        quiet, anti = rng.sample(range(3), 2)
        token = _write(audio_dir, headphone_trial(quiet, anti), HEADPHONE_RATE)
        files[token] = f"{token}.wav"
        hp_tokens.append(token)
        hp_answers.append(quiet)
    calib = np.stack([_tone(200.0, 2.0, HEADPHONE_RATE) * 0.3] * 2, axis=1).astype(np.float32)
    calibration = _write(audio_dir, calib, HEADPHONE_RATE)
    files[calibration] = f"{calibration}.wav"

    config = TestConfig(
        title=title, seed=seed if seed is not None else secrets.randbits(48),
        tasks=tuple(tasks), systems=tuple(systems),
        questions={q.question_id: asdict(q) for q in questions}, samples=samples, files=files,
        catch_per_task=catch_per_task, catch_tokens=tuple(catch_tokens),
        headphone_tokens=tuple(hp_tokens), headphone_answers=tuple(hp_answers),
        calibration_token=calibration,
        completion_code=completion_code or secrets.token_hex(4).upper(),
        screenout_code=screenout_code or secrets.token_hex(4).upper(),
        completion_url=completion_url, min_catch_correct=min_catch_correct,
        corpus_sha256=corpus.fingerprint, adept_eval_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        sources={n: ("ADEPT natural recordings" if f is None else str(Path(f).resolve()))
                 for n, f in systems.items()},
        loudness=("as each system produced it" if match_loudness is None else
                  f"every stimulus matched to {match_loudness:g} dBFS speech level (RMS of the "
                  "frames within 35 dB of the loudest)"))
    tmp = out / (CONFIG_FILE + ".tmp")
    tmp.write_text(json.dumps(config.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(out / CONFIG_FILE)
    return config


# ----------------------------------------------------------------------------- plans
@dataclass(frozen=True)
class Item:
    """One screen of a participant's test: a question or a catch trial, as presented."""

    key: str  # question_id, or "catch/<task>/<k>"
    kind: str  # "question" | "catch"
    task: str
    system: str
    wording: str
    design: str  # "multi" (pick a sample) | "single" (hear one sample, pick a text)
    audio: tuple[str, ...]  # tokens, in presented order
    choices: tuple[str, ...]  # as presented
    order: tuple[int, ...]  # presented position -> canonical choice index (questions.py order)
    answer: int  # canonical index of the right choice (catch: presented position of the beep)
    question_id: str = ""

    def canonical(self, position: int) -> int:
        return self.order[position]

    def to_json(self) -> dict:
        """The item as stored in the participant's plan (what ``item_from`` reads back); by hand,
        as ``dataclasses.asdict`` deep-copies every field and made drawing a 12-task plan cost
        ~25 ms of CPU per arriving participant."""
        return {"key": self.key, "kind": self.kind, "task": self.task, "system": self.system,
                "wording": self.wording, "design": self.design, "audio": list(self.audio),
                "choices": list(self.choices), "order": list(self.order), "answer": self.answer,
                "question_id": self.question_id}

    def public(self) -> dict:
        """What the browser sees: no answer, no ids beyond the opaque item key's index."""
        return {"wording": self.wording, "design": self.design, "audio": list(self.audio),
                "choices": list(self.choices)}


def participant_seed(config: TestConfig, participant: str) -> int:
    h = hashlib.sha256(f"{config.seed}|{participant}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def plan_for(config: TestConfig, participant: str, index: int) -> dict:
    """The participant's items (JSON-able), drawn once from their own seeded generator.

    ``index`` is the participant's arrival number (0, 1, ...): task j of the test (in the
    design's order) is heard in system ``(index + j) mod n_systems``, so over any n_systems
    consecutive participants every task is heard equally often in every system.
    """
    seed = participant_seed(config, participant)
    rng = random.Random(seed)
    n_sys = len(config.systems)
    system_of = {t: config.systems[(index + j) % n_sys] for j, t in enumerate(config.tasks)}
    task_order = list(config.tasks)
    rng.shuffle(task_order)
    items: list[Item] = []
    for t in task_order:
        system = system_of[t]
        qs = config.task_questions(t)
        rng.shuffle(qs)
        task_items = [_question_item(q, system, config, rng) for q in qs]
        slot = config.tasks.index(t) * config.catch_per_task
        for k in range(config.catch_per_task):
            catch = _catch_item(t, k, system, qs, config.catch_tokens[slot + k], config, rng)
            task_items.insert(rng.randint(1, len(task_items)), catch)
        items += task_items
    return {"seed": seed, "index": index, "systems": system_of, "task_order": task_order,
            "items": [i.to_json() for i in items]}


def item_from(d: dict) -> Item:
    return Item(**{**d, "audio": tuple(d["audio"]), "choices": tuple(d["choices"]),
                   "order": tuple(d["order"])})


def _question_item(q: Question, system: str, config: TestConfig, rng: random.Random) -> Item:
    tokens = [config.samples[system][s] for s in q.stimuli]
    if q.design == "multi":
        order = list(range(len(q.stimuli)))
        rng.shuffle(order)
        return Item(q.question_id, "question", q.task, system, q.question, "multi",
                    tuple(tokens[i] for i in order),
                    tuple(f"Sample {LETTERS[p]}" for p in range(len(order))), tuple(order),
                    q.answer, q.question_id)
    # single-stimulus: the options keep adept_prompts.json's order, as the tutorial shows them
    return Item(q.question_id, "question", q.task, system, q.question, "single", tuple(tokens),
                q.choices, tuple(range(q.n_choices)), q.answer, q.question_id)


def _catch_item(task: str, k: int, system: str, qs: list[Question], beep: str,
                config: TestConfig, rng: random.Random) -> Item:
    key = f"catch/{task}/{k}"
    if spec.task(task).cls.design == "multi":
        q = rng.choice(qs)
        tokens = [config.samples[system][s] for s in q.stimuli]
        rng.shuffle(tokens)
        at = rng.randrange(len(tokens))
        tokens[at] = beep
        n = len(tokens)
        return Item(key, "catch", task, system, CATCH_MULTI_WORDING, "multi", tuple(tokens),
                    tuple(f"Sample {LETTERS[p]}" for p in range(n)), tuple(range(n)), at)
    choices = list(CATCH_SINGLE_CHOICES)
    flip = rng.random() < 0.5
    if flip:
        choices.reverse()
    return Item(key, "catch", task, system, CATCH_SINGLE_WORDING, "single", (beep,),
                tuple(choices), (0, 1), 1 if flip else 0)
