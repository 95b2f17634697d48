"""Which participant hears what: a built test, its blinded audio, and each participant's plan.

``build_test`` writes a self-contained test folder:

    test.json     the design: tasks, systems, every question (as
                  ``adept_eval.corpora.questions`` builds it), the token of every audio
                  file, headphone-check key, completion codes
    audio/        every file a participant may hear, named by an opaque random token (no class,
                  subcategory, sentence or system in any name), re-encoded from the system's
                  file to one format for all (one rate, 16-bit PCM, mono WAV, no metadata
                  chunk), so neither a file's header nor a tag tells systems apart

Served audio tells systems apart by nothing but how they sound: every stimulus of every system
is brought to the test's one rate (the lowest any system has, at most ``BLIND_RATE``) and
low-passed at one cut-off below its Nyquist frequency (``BANDWIDTH_SHARE``), so no system's
files carry energy another's cannot; and every system's version of a stimulus is padded with
silence to the longest one's length, so a file's size is the stimulus's, never the system's.

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

Single-stimulus attention checks play either a beep or one of the task's speech samples (drawn
per participant), so their right answer varies.

The headphone check is the anti-phase test of Woods, Siegel, Traer & McDermott (2017, Attention,
Perception & Psychophysics 79:2064-2072): each trial plays three 200 Hz tones, one 6 dB quieter,
one in anti-phase between the ears (quieter over loudspeakers, where the channels cancel, but not
over headphones); the listener picks the quietest. Six trials, one for each placement of the
quiet and the anti-phase tone, in an order drawn per participant (``headphone_order``), so the
key differs between participants; pass with at least five correct.
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
from adept_eval.corpora.questions import LETTERS, Question, build_questions
from adept_eval.errors import DesignError
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
    rate: int = 44100  # the rate of every stimulus and beep served
    bandwidth: float = 0.0  # Hz every stimulus was low-passed at (0: not)

    def question(self, question_id: str) -> Question:
        """Read one question of the design.

        Args:
            question_id: The question's id.

        Returns:
            The question as a ``Question``.
        """
        fields = dict(self.questions[question_id])
        for name in ("stimuli", "stimulus_subcategories", "choices", "choice_subcategories"):
            fields[name] = tuple(fields[name])
        return Question(**fields)

    def task_questions(self, task: str) -> list[Question]:
        """List one task's questions.

        Args:
            task: The task.

        Returns:
            Its questions in the design's order (a new list: callers shuffle it).
        """
        return list(self._questions_by_task.get(task, ()))

    @cached_property
    def _questions_by_task(self) -> dict[str, tuple[Question, ...]]:
        """Each task's questions, parsed once per loaded design: every arriving participant's
        plan draws from them."""
        by_task: dict[str, list[Question]] = {}
        for question_id, fields in self.questions.items():
            by_task.setdefault(fields["task"], []).append(self.question(question_id))
        return {task: tuple(questions) for task, questions in by_task.items()}

    def to_json(self) -> dict:
        """The design as ``test.json`` stores it."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "TestConfig":
        """Read a design from ``test.json``'s contents.

        Args:
            data: The parsed JSON.

        Returns:
            The design.

        Raises:
            DesignError: The design's format is not this version's.
            TypeError: A field is missing or unknown.
        """
        if data.get("format") != FORMAT:
            raise DesignError(f"test format {data.get('format')!r} is not {FORMAT}; "
                              "rebuild the test")
        data = dict(data)
        for name in ("tasks", "systems", "catch_tokens", "headphone_tokens",
                     "headphone_answers"):
            data[name] = tuple(data[name])
        return cls(**data)


def load_test(folder: str | Path) -> TestConfig:
    """Load a built test's design.

    Args:
        folder: The test folder.

    Returns:
        Its design, from ``test.json`` (or a sealed test's ``test.sealed``).

    Raises:
        DesignError: The folder holds no test, or its design cannot be read (a sealed test's,
            ``sealed.unseal``: without its key).
    """
    from adept_eval.listening_test.sealed import SEALED_FILE, unseal

    path = Path(folder) / CONFIG_FILE
    if not path.exists() and (Path(folder) / SEALED_FILE).exists():
        path = Path(folder) / SEALED_FILE
        text = unseal(Path(folder)).decode("utf-8")
    elif not path.exists():
        raise DesignError(f"{path}: no listening test here (build one with "
                          "`adept-eval listening-test build`)")
    else:
        text = path.read_text(encoding="utf-8")
    try:
        return TestConfig.from_json(json.loads(text))
    except (ValueError, TypeError) as exc:
        raise DesignError(f"{path}: unreadable test design ({exc})") from None


def seal_test(folder: str | Path, out: str | Path) -> str:
    """Write a sealed copy of a built test, for a public place (``sealed``): its audio, and
    its design encrypted with a new key.

    Args:
        folder: The built test.
        out: The folder to write (new, or empty).

    Returns:
        The key that opens it (to be kept as a secret, never in the folder).

    Raises:
        DesignError: ``folder`` holds no test, or ``out`` is not empty.
    """
    import shutil

    from adept_eval.listening_test.sealed import SEALED_FILE, encrypt

    folder, out = Path(folder), Path(out)
    config = load_test(folder)  # a clear message for a folder that is no test
    if out.exists() and any(out.iterdir()):
        raise DesignError(f"{out}: not empty; seal the test into a new folder")
    sealed, key = encrypt((folder / CONFIG_FILE).read_bytes())
    (out / AUDIO_DIR).mkdir(parents=True)
    for name in config.files.values():
        shutil.copyfile(folder / AUDIO_DIR / name, out / AUDIO_DIR / name)
    (out / SEALED_FILE).write_bytes(sealed)
    return key


# ----------------------------------------------------------------------------- building
def _tone(freq: float, seconds: float, rate: int, ramp: float = 0.1) -> np.ndarray:
    """A sine tone of ``freq`` Hz lasting ``seconds``, with ``ramp``-second sine-squared
    onset and offset (no click)."""
    t = np.arange(int(seconds * rate)) / rate
    x = np.sin(2 * np.pi * freq * t)
    ramp_samples = int(ramp * rate)
    envelope = np.ones_like(x)
    envelope[:ramp_samples] = np.sin(np.linspace(0, np.pi / 2, ramp_samples)) ** 2
    envelope[-ramp_samples:] = envelope[:ramp_samples][::-1]
    return x * envelope


def headphone_trial(quiet_at: int, antiphase_at: int, rate: int = HEADPHONE_RATE) -> np.ndarray:
    """Make one anti-phase headphone trial: three 1 s 200 Hz tones, 0.5 s apart.

    Args:
        quiet_at: The tone (0-2) 6 dB down.
        antiphase_at: The tone (0-2) whose right channel is inverted.
        rate: The sample rate.

    Returns:
        Stereo float32 samples, shape (samples, 2).
    """
    tone = _tone(200.0, 1.0, rate) * 0.3
    gap = np.zeros((int(0.5 * rate), 2))
    parts = []
    for i in range(3):
        left = tone * (10 ** (-6 / 20) if i == quiet_at else 1.0)
        right = -left if i == antiphase_at else left
        parts += [np.stack([left, right], axis=1)] + ([gap] if i < 2 else [])
    return np.concatenate(parts).astype(np.float32)


def _write(audio_dir: Path, data: np.ndarray, rate: int) -> str:
    """Write ``data`` as a 16-bit WAV named by a new random token; return the token."""
    token = secrets.token_hex(12)  # hex: no word can turn up in a name by chance
    sf.write(str(audio_dir / f"{token}.wav"), data, rate, subtype="PCM_16", format="WAV")
    return token


#: the highest rate a test serves its stimuli at (ADEPT's own rate)
BLIND_RATE = 44100
#: the low-pass cut-off every stimulus gets, as a share of the test's Nyquist frequency: below
#: the band where resamplers (and systems' own output filters) roll off differently
BANDWIDTH_SHARE = 0.9


def speech_level_db(x: np.ndarray, rate: int) -> float:
    """Measure a sample's speech level: the RMS level of its 20 ms frames within 35 dB of the
    loudest, so the silence around the speech does not lower it.

    Args:
        x: Mono samples.
        rate: The sample rate.

    Returns:
        The level in dBFS (-inf for a sample shorter than one frame).
    """
    hop = max(1, int(0.02 * rate))
    frames = len(x) // hop
    if frames == 0:
        return float("-inf")
    energy = np.mean(x[: frames * hop].reshape(frames, hop).astype(np.float64) ** 2, axis=1)
    db = 10 * np.log10(energy + 1e-12)
    active = energy[db > db.max() - 35.0]
    return float(10 * np.log10(np.mean(active) + 1e-12))


def native_rate(path: Path) -> int:
    """A source file's sample rate (from its header where libsndfile reads it).

    Args:
        path: The file.

    Returns:
        Its rate in Hz.
    """
    try:
        return int(sf.info(str(path)).samplerate)
    except (RuntimeError, OSError):
        from adept_eval.signal.audio import read_audio

        return read_audio(path).rate


def _blinded(path: Path, target_db: float | None, rate: int, cutoff: float) -> np.ndarray:
    """A system's sample as served: mono, at ``rate``, low-passed at ``cutoff`` Hz (zero-phase,
    so every system's sample goes through the very same filter), optionally at ``target_db``
    speech level (lowered as a whole if that would clip)."""
    from scipy.signal import butter, sosfiltfilt

    from adept_eval.signal.audio import read_audio, resample

    x = resample(read_audio(path), rate).samples.astype(np.float64)
    if x.size > 60:  # sosfiltfilt pads by a few times the filter's order
        x = sosfiltfilt(butter(8, cutoff, fs=rate, output="sos"), x)
    if target_db is not None:
        x = x * 10 ** ((target_db - speech_level_db(x, rate)) / 20)
        peak = float(np.max(np.abs(x))) if x.size else 0.0
        if peak > 0.99:
            x = x * (0.99 / peak)
    return x.astype(np.float32)


def _source_files(corpus: Corpus, systems: dict[str, str | Path | None],
                  stimuli: list[str]) -> dict[str, dict[str, Path]]:
    """Find the file to serve for each system and stimulus.

    Args:
        corpus: The ADEPT corpus.
        systems: Each system's source: a samples folder, an lm-eval run, or None for the
            corpus's natural recordings.
        stimuli: The stimulus ids the test plays.

    Returns:
        system -> stimulus id -> file.

    Raises:
        DesignError: A source is not a folder or run, or has missing or unusable samples.
    """
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
    """Tell an lm-eval run from a samples folder in ADEPT's layout.

    Args:
        source: A system's source.

    Returns:
        Whether it is an lm-eval run: its ``results_*.json``, or an ``--output_path`` folder
        holding runs.
    """
    source = Path(source)
    if source.is_file():
        return source.name.startswith("results") and source.suffix == ".json"
    return source.is_dir() and not any((source / c).is_dir() for c in spec.CLASSES) and \
        any(source.rglob("results_*.json"))


def lm_eval_run(source: Path, name: str | None = None) -> tuple["Run", str]:
    """Find the run a system's source names.

    A ``results_*.json`` is that run. An ``--output_path`` folder may hold runs of several
    systems (lm-eval writes each model's runs beside the others'); taking the newest of them
    all could make participants hear another system than the one meant. One source is one
    system of the test, as a samples folder is, so a folder holding runs of several systems is
    refused, naming them and the source that names each; turning them into several systems on
    its own would change the test's design (each task rotates over every system, so each
    system gets fewer participants) behind the user's back. Among runs of one system the
    newest is taken, and the note says which and among how many.

    Args:
        source: A results file or a folder holding runs.
        name: The system's name in the test, for messages.

    Returns:
        (the run, a note saying how it was chosen, to print).

    Raises:
        DesignError: The source cannot be read, or holds runs of several systems.
    """
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
    chosen = max(own, key=lambda run: run.when)
    note = str(chosen.results_path)
    if len(own) > 1:
        note += (f" (the newest of {len(own)} runs of {system} in {source}; name another "
                 "run's results_*.json to use it)")
    return chosen, note


def system_name(system: str) -> str:
    """Turn a run's own system name into a test's system name.

    Args:
        system: The run's system name.

    Returns:
        The name with path separators and new lines replaced by "__" ("system" if empty).
    """
    import re

    return re.sub(r"[/\\\n]+", "__", system).strip() or "system"


def _where(system: str, by_system: dict[str, list]) -> Path:
    """What names one system's runs in a folder holding several systems': the folder holding
    all its runs when no other system's run is in it (lm-eval's --output_path/<model>/), else
    its newest run's results file."""
    import os

    own = by_system[system]
    folder = Path(os.path.commonpath([run.results_path.parent for run in own]))
    others = [run for name, runs in by_system.items() if name != system for run in runs]
    if not any(folder in run.results_path.parents for run in others):
        return folder
    return max(own, key=lambda run: run.when).results_path


def _run_files(corpus: Corpus, name: str, run: "Run", stimuli: list[str]) -> dict[str, Path]:
    """Find the audio an lm-eval run logged (``--output_path`` with ``--log_samples``), checked
    like a samples folder.

    Args:
        corpus: The ADEPT corpus (for each stimulus's reference duration).
        name: The system's name in the test, for messages.
        run: The run.
        stimuli: The stimulus ids the test plays.

    Returns:
        stimulus id -> logged file.

    Raises:
        DesignError: The run's audio cannot be listed, or a sample is missing or unusable.
    """
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
    """Refuse to build a test in a folder that holds a test or a responses database already.

    Args:
        out: The folder to build in.

    Raises:
        DesignError: It holds a test (whose design must never change), or another test's
            responses (a new design over them would make every later report, status and
            export fail on their question ids).
    """
    out = Path(out)
    if (out / CONFIG_FILE).exists():
        raise DesignError(f"{out} already holds a listening test; choose another folder "
                          "(a test's design never changes once participants may have seen it)")
    if (out / DB_FILE).exists():
        raise DesignError(f"{out / DB_FILE}: {out} already holds a responses database (another "
                          "test's answers); build the test in another folder, or move the "
                          "database away first")


def build_test(corpus: Corpus, out: str | Path, systems: dict[str, str | Path | None], *,
               tasks: list[str] | None = None, title: str = "ADEPT listening test",
               seed: int | None = None, catch_per_task: int = 1, min_catch_correct: float = 1.0,
               completion_code: str | None = None, screenout_code: str | None = None,
               completion_url: str = "", match_loudness: float | None = None) -> TestConfig:
    """Write a test folder: ``test.json`` and the blinded ``audio/``.

    Args:
        corpus: The ADEPT corpus.
        out: The folder to build in (new, or without a test or responses).
        systems: Each system's name and source: a samples folder, an lm-eval run, or None for
            ADEPT's natural recordings.
        tasks: The tasks (default: all 12).
        title: The test's title, shown to participants.
        seed: The seed of the catch trials, the headphone check and every plan (default:
            random).
        catch_per_task: Attention checks per task.
        min_catch_correct: The share of attention checks a participant must get right.
        completion_code: The code shown on completion (default: random).
        screenout_code: The code shown when screened out (default: random).
        completion_url: A URL the finished participant is sent to (``{code}`` is replaced).
        match_loudness: A speech level (dBFS, e.g. -23) every stimulus is brought to (None:
            as each system produced it).

    Returns:
        The test's design.

    Raises:
        DesignError: An option that cannot work, a folder already used, or a system's missing
            or unusable samples.
    """
    tasks = list(tasks or spec.TASKS)
    _check_build_options(tasks, systems, catch_per_task, min_catch_correct, match_loudness)
    out = Path(out)
    check_new_folder(out)
    systems = _runs_resolved(systems)
    questions = [question for task in tasks for question in build_questions(corpus, task)]
    stimuli = sorted({stimulus for question in questions for stimulus in question.stimuli})
    sources = _source_files(corpus, systems, stimuli)

    audio_dir = out / AUDIO_DIR
    audio_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    rate = min([BLIND_RATE] + [native_rate(path) for by_stimulus in sources.values()
                               for path in by_stimulus.values()])
    samples, lengths = _write_stimuli(audio_dir, sources, match_loudness, files, rate)
    rng = random.Random(seed)
    catch_tokens = _write_beeps(audio_dir, tasks, questions, lengths, catch_per_task, rng,
                                files, rate)
    headphone_tokens, headphone_answers = _write_headphone_check(audio_dir, rng, files)
    calibration = _write_calibration(audio_dir, files)

    config = TestConfig(
        title=title, seed=seed if seed is not None else secrets.randbits(48),
        tasks=tuple(tasks), systems=tuple(systems),
        questions={question.question_id: asdict(question) for question in questions},
        samples=samples, files=files,
        catch_per_task=catch_per_task, catch_tokens=tuple(catch_tokens),
        headphone_tokens=tuple(headphone_tokens), headphone_answers=tuple(headphone_answers),
        calibration_token=calibration,
        completion_code=completion_code or secrets.token_hex(4).upper(),
        screenout_code=screenout_code or secrets.token_hex(4).upper(),
        completion_url=completion_url, min_catch_correct=min_catch_correct,
        corpus_sha256=corpus.fingerprint, adept_eval_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        sources=_source_notes(systems),
        loudness=_loudness_note(match_loudness), rate=rate,
        bandwidth=round(BANDWIDTH_SHARE * rate / 2, 1))
    tmp = out / (CONFIG_FILE + ".tmp")
    tmp.write_text(json.dumps(config.to_json(), indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(out / CONFIG_FILE)
    return config


def _write_calibration(audio_dir: Path, files: dict[str, str]) -> str:
    """Write the volume-calibration tone (2 s of 200 Hz, both channels).

    Args:
        audio_dir: The test's audio folder.
        files: Token -> file name, updated in place.

    Returns:
        The tone's token.
    """
    calibration_tone = np.stack([_tone(200.0, 2.0, HEADPHONE_RATE) * 0.3] * 2,
                                axis=1).astype(np.float32)
    calibration = _write(audio_dir, calibration_tone, HEADPHONE_RATE)
    files[calibration] = f"{calibration}.wav"
    return calibration


def _source_notes(systems: dict[str, str | Path | None]) -> dict[str, str]:
    """How the test records each system's source.

    Args:
        systems: Each system's name and source (None for ADEPT's natural recordings).

    Returns:
        Name -> the source's absolute path, or "ADEPT natural recordings".
    """
    return {name: ("ADEPT natural recordings" if source is None
                   else str(Path(source).resolve()))
            for name, source in systems.items()}


def _runs_resolved(systems: dict[str, str | Path | None]) -> dict[str, str | Path | None]:
    """Each system's source, with an lm-eval run folder replaced by the results file of the
    run it holds, so the test records the very run heard.

    Args:
        systems: Each system's name and source.

    Returns:
        The same mapping, run folders resolved.

    Raises:
        DesignError: A run folder cannot be read, or holds runs of several systems.
    """
    return {name: lm_eval_run(Path(source), name)[0].results_path
            if source is not None and is_lm_eval_run(Path(source)) else source
            for name, source in systems.items()}


def _loudness_note(match_loudness: float | None) -> str:
    """How the stimuli's levels were set, as the design records it."""
    if match_loudness is None:
        return "as each system produced it"
    return (f"every stimulus matched to {match_loudness:g} dBFS speech level (RMS of the "
            "frames within 35 dB of the loudest)")


def _check_build_options(tasks: list[str], systems: dict, catch_per_task: int,
                         min_catch_correct: float, match_loudness: float | None) -> None:
    """Refuse build options that cannot work, before anything is written.

    Args:
        tasks: The tasks.
        systems: Each system's name and source.
        catch_per_task: Attention checks per task.
        min_catch_correct: The share of attention checks a participant must get right.
        match_loudness: The speech level to match, or None.

    Raises:
        DesignError: An unknown task, no system, a system name that is not a plain name, a
            negative number of checks, a share outside 0-1, or a level that cannot be reached
            (``_check_loudness``).
    """
    for task in tasks:
        try:
            spec.task(task)
        except KeyError as exc:
            raise DesignError(exc.args[0]) from None
    if not systems:
        raise DesignError("a listening test needs at least one system")
    for name in systems:
        if not name or any(character in name for character in "/\\\n"):
            raise DesignError(f"system name {name!r}: use letters, digits, '-', '_' or '.'")
    if catch_per_task < 0:
        raise DesignError("catch_per_task must be 0 or more")
    if not 0 <= min_catch_correct <= 1:  # a share: above 1 no participant could be included
        raise DesignError(f"min_catch_correct={min_catch_correct}: a share of the attention "
                          "checks, from 0 to 1")
    _check_loudness(match_loudness)


def _check_loudness(match_loudness: float | None) -> None:
    """Refuse a speech level to match that cannot be reached.

    Args:
        match_loudness: The level in dBFS, or None (no matching).

    Raises:
        DesignError: The level is not a number from ``MIN_LOUDNESS`` up to (not including) 0.
    """
    if match_loudness is not None and not (math.isfinite(match_loudness)
                                           and MIN_LOUDNESS <= match_loudness < 0):
        # NaN would make every stimulus full-scale noise; 0 dBFS or above cannot be reached
        # without clipping, so each stimulus would be lowered on its own and not matched at
        # all; a level far below MIN_LOUDNESS would build a silent test
        raise DesignError(f"match_loudness={match_loudness}: a speech level in dBFS below 0 "
                          f"(full scale) and at least {MIN_LOUDNESS:g}, e.g. -23")


def _write_stimuli(audio_dir: Path, sources: dict[str, dict[str, Path]],
                   match_loudness: float | None, files: dict[str, str],
                   rate: int) -> tuple[dict[str, dict[str, str]], dict[str, int]]:
    """Write every system's stimuli, blinded, under random tokens: at ``rate``, low-passed
    at ``BANDWIDTH_SHARE`` of its Nyquist frequency, and every system's version of a stimulus
    padded with silence to the longest one's length.

    Args:
        audio_dir: The test's audio folder.
        sources: system -> stimulus id -> the system's file.
        match_loudness: The speech level to bring each stimulus to, or None.
        files: token -> file name, extended with each file written.
        rate: The rate every stimulus is served at.

    Returns:
        (system -> stimulus id -> token, stimulus id -> its length in samples, the same in
        every system).
    """
    samples: dict[str, dict[str, str]] = {name: {} for name in sources}
    lengths: dict[str, int] = {}
    cutoff = BANDWIDTH_SHARE * rate / 2
    stimuli = sorted({stimulus for by_stimulus in sources.values() for stimulus in by_stimulus})
    for stimulus in stimuli:  # one stimulus at a time: every system's version in memory at once
        versions = {name: _blinded(by_stimulus[stimulus], match_loudness, rate, cutoff)
                    for name, by_stimulus in sources.items() if stimulus in by_stimulus}
        length = max(len(x) for x in versions.values())
        for name, x in versions.items():
            token = _write(audio_dir, np.pad(x, (0, length - len(x))), rate)
            files[token] = f"{token}.wav"
            samples[name][stimulus] = token
        lengths[stimulus] = length
    return samples, lengths


def _write_beeps(audio_dir: Path, tasks: list[str], questions: list[Question],
                 lengths: dict[str, int], catch_per_task: int, rng: random.Random,
                 files: dict[str, str], rate: int = BLIND_RATE) -> list[str]:
    """Write the catch trials' beeps, each as long as a stimulus of its task drawn at random
    (so a file's size does not give a catch trial away).

    Args:
        audio_dir: The test's audio folder.
        tasks: The tasks, in the order ``plan_for`` reads the beeps.
        questions: Every question of the test.
        lengths: Each stimulus's length in samples.
        catch_per_task: Beeps per task.
        rng: The test's random generator.
        files: token -> file name, extended with each file written.
        rate: The rate of the test's stimuli (the beeps' too).

    Returns:
        The beeps' tokens, task by task, ``catch_per_task`` each.
    """
    tokens = []
    for task in tasks:
        task_lengths = sorted({lengths[stimulus] for question in questions
                               if question.task == task for stimulus in question.stimuli})
        for _ in range(catch_per_task):
            length = rng.choice(task_lengths)
            beep = _tone(1000.0, (length + 0.5) / rate, rate, ramp=0.02) * 0.2
            token = _write(audio_dir, beep[:length], rate)
            files[token] = f"{token}.wav"
            tokens.append(token)
    return tokens


def _write_headphone_check(audio_dir: Path, rng: random.Random,
                           files: dict[str, str]) -> tuple[list[str], list[int]]:
    """Write the headphone check's ``HEADPHONE_TRIALS`` anti-phase trials: one for each
    placement of the quiet tone and the anti-phase one (3 x 2), in a random order.

    Args:
        audio_dir: The test's audio folder.
        rng: The test's random generator.
        files: token -> file name, extended with each file written.

    Returns:
        (each trial's token, each trial's answer: the quiet tone's index).
    """
    tokens, answers = [], []
    placements = [(quiet, antiphase) for quiet in range(3) for antiphase in range(3)
                  if quiet != antiphase]
    rng.shuffle(placements)
    for quiet, antiphase in placements[:HEADPHONE_TRIALS]:
        token = _write(audio_dir, headphone_trial(quiet, antiphase), HEADPHONE_RATE)
        files[token] = f"{token}.wav"
        tokens.append(token)
        answers.append(quiet)
    return tokens, answers


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
        """Map a presented position to its choice.

        Args:
            position: The position the choice was presented at.

        Returns:
            Its canonical choice index (``questions.py``'s order).
        """
        return self.order[position]

    def to_json(self) -> dict:
        """The item as stored in the participant's plan (what ``item_from`` reads back); by hand,
        as ``dataclasses.asdict`` deep-copies every field, which would make drawing a 12-task
        plan cost ~25 ms of CPU per arriving participant."""
        return {"key": self.key, "kind": self.kind, "task": self.task, "system": self.system,
                "wording": self.wording, "design": self.design, "audio": list(self.audio),
                "choices": list(self.choices), "order": list(self.order), "answer": self.answer,
                "question_id": self.question_id}

    def public(self) -> dict:
        """What the browser sees: no answer, no ids beyond the opaque item key's index."""
        return {"wording": self.wording, "design": self.design, "audio": list(self.audio),
                "choices": list(self.choices)}


def headphone_order(config: TestConfig, participant: str) -> list[int]:
    """Draw the order a participant hears the headphone check's trials in, from the test's
    (secret) seed and the participant id: each participant's key is their own.

    Args:
        config: The test's design.
        participant: The participant id.

    Returns:
        A permutation of the trials' indices.
    """
    digest = hashlib.sha256(f"{config.seed}|headphone|{participant}".encode()).digest()
    order = list(range(len(config.headphone_tokens)))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


def participant_seed(config: TestConfig, participant: str) -> int:
    """The seed of a participant's plan: from the test's seed and the participant id.

    Args:
        config: The test's design.
        participant: The participant id.

    Returns:
        A 64-bit seed.
    """
    digest = hashlib.sha256(f"{config.seed}|{participant}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def plan_for(config: TestConfig, participant: str, index: int) -> dict:
    """Draw a participant's plan, once, from their own seeded generator.

    Task j of the test (in the design's order) is heard in system ``(index + j) mod
    n_systems``, so over any n_systems consecutive participants every task is heard equally
    often in every system.

    Args:
        config: The test's design.
        participant: The participant id.
        index: The participant's arrival number (0, 1, ...).

    Returns:
        The plan, JSON-able: its seed, the arrival number, each task's system, the task order
        and the items.
    """
    seed = participant_seed(config, participant)
    rng = random.Random(seed)
    n_systems = len(config.systems)
    system_of = {task: config.systems[(index + position) % n_systems]
                 for position, task in enumerate(config.tasks)}
    task_order = list(config.tasks)
    rng.shuffle(task_order)
    items: list[Item] = []
    for task in task_order:
        system = system_of[task]
        questions = config.task_questions(task)
        rng.shuffle(questions)
        task_items = [_question_item(question, system, config, rng) for question in questions]
        slot = config.tasks.index(task) * config.catch_per_task
        for number in range(config.catch_per_task):
            catch = _catch_item(task, number, system, questions,
                                config.catch_tokens[slot + number], config, rng)
            task_items.insert(rng.randint(1, len(task_items)), catch)
        items += task_items
    return {"seed": seed, "index": index, "systems": system_of, "task_order": task_order,
            "items": [item.to_json() for item in items]}


def item_from(data: dict) -> Item:
    """Read back an item stored in a plan.

    Args:
        data: The item as ``Item.to_json`` stored it.

    Returns:
        The item.
    """
    return Item(**{**data, "audio": tuple(data["audio"]), "choices": tuple(data["choices"]),
                   "order": tuple(data["order"])})


def _question_item(question: Question, system: str, config: TestConfig,
                   rng: random.Random) -> Item:
    """Present a question in ``system``: a multi-stimulus question's samples in a random
    order, a single-stimulus question's choices in the corpus's order."""
    tokens = [config.samples[system][stimulus] for stimulus in question.stimuli]
    if question.design == "multi":
        order = list(range(len(question.stimuli)))
        rng.shuffle(order)
        return Item(question.question_id, "question", question.task, system, question.question,
                    "multi", tuple(tokens[i] for i in order),
                    tuple(f"Sample {LETTERS[position]}" for position in range(len(order))),
                    tuple(order), question.answer, question.question_id)
    # single-stimulus: the options keep adept_prompts.json's order, as the tutorial shows them
    return Item(question.question_id, "question", question.task, system, question.question,
                "single", tuple(tokens), question.choices, tuple(range(question.n_choices)),
                question.answer, question.question_id)


def _catch_item(task: str, number: int, system: str, questions: list[Question], beep: str,
                config: TestConfig, rng: random.Random) -> Item:
    """Make a task's attention check ``number``: in a multi-stimulus task, a random question's
    samples with one replaced by the beep (which sample is it?); in a single-stimulus task,
    the beep or one of the task's speech samples, drawn at random (what is it?), so the right
    answer is not always the same."""
    key = f"catch/{task}/{number}"
    if spec.task(task).cls.design == "multi":
        question = rng.choice(questions)
        tokens = [config.samples[system][stimulus] for stimulus in question.stimuli]
        rng.shuffle(tokens)
        beep_at = rng.randrange(len(tokens))
        tokens[beep_at] = beep
        count = len(tokens)
        return Item(key, "catch", task, system, CATCH_MULTI_WORDING, "multi", tuple(tokens),
                    tuple(f"Sample {LETTERS[position]}" for position in range(count)),
                    tuple(range(count)), beep_at)
    choices = list(CATCH_SINGLE_CHOICES)
    flip = rng.random() < 0.5
    if flip:
        choices.reverse()
    sample, heard = beep, CATCH_SINGLE_CHOICES[0]
    if rng.random() < 0.5:  # speech this time
        sample = config.samples[system][rng.choice(questions).stimuli[0]]
        heard = CATCH_SINGLE_CHOICES[1]
    return Item(key, "catch", task, system, CATCH_SINGLE_WORDING, "single", (sample,),
                tuple(choices), (0, 1), choices.index(heard))
