"""What a prosody-transfer system must synthesise, and whether a folder of samples is complete.

A system's samples mirror ADEPT's own layout: the sample re-synthesising
``wav_44khz/emotion/fear/ad00_0001.wav`` lives at ``<dir>/emotion/fear/ad00_0001.wav``
(``.flac``, ``.mp3``, ``.ogg`` and ``.opus`` are accepted too: ``audio.AUDIO_EXTENSIONS``).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import soundfile as sf
from tqdm.auto import tqdm

from adept_eval.signal.audio import (
    AUDIO_EXTENSIONS,
    AudioReport,
    Problem,
    check_audio,
    find_audio,
    missing_audio_message,
)
from adept_eval.corpora.corpus import Corpus


@dataclass(frozen=True)
class ManifestEntry:
    """One stimulus to synthesise: the reference to transfer prosody from, and where to put it."""

    stimulus_id: str
    speaker: str
    speaker_id: str
    cls: str
    subcategory: str
    sentence_id: str
    text: str
    reference_audio: str
    output_path: str  # relative to the system's folder


def build_manifest(corpus: Corpus) -> list[ManifestEntry]:
    """The manifest: one entry per natural recording, saying where its sample goes.

    Args:
        corpus: The corpus.

    Returns:
        The entries, in the corpus's order.
    """
    return [ManifestEntry(r.stimulus_id, r.speaker, r.speaker_id, r.cls, r.subcategory,
                          r.sentence_id, r.text, r.audio_path, f"{r.stimulus_id}.wav")
            for r in corpus.recordings]


def write_manifest(entries: list[ManifestEntry], out: Path) -> list[Path]:
    """Write the manifest as CSV and JSONL.

    Args:
        entries: The manifest's entries.
        out: The file, with either suffix, or a stem.

    Returns:
        The CSV and JSONL paths.
    """
    out = Path(out)
    stem = out.with_suffix("") if out.suffix in (".csv", ".jsonl") else out
    stem.parent.mkdir(parents=True, exist_ok=True)
    rows = [_row(e) for e in entries]
    csv_path, jsonl_path = stem.with_suffix(".csv"), stem.with_suffix(".jsonl")
    with open(csv_path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(jsonl_path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return [csv_path, jsonl_path]


def _row(entry: ManifestEntry) -> dict:
    """One entry as a manifest row, its columns in the manifest's order."""
    row = asdict(entry)
    row["class"] = row.pop("cls")
    return {k: row[k] for k in ("stimulus_id", "speaker", "speaker_id", "class", "subcategory",
                                "sentence_id", "text", "reference_audio", "output_path")}


@dataclass
class FolderCheck:
    """The result of checking a system's folder against the manifest."""

    folder: str
    expected: int
    samples: dict[str, AudioReport] = field(default_factory=dict)  # stimulus_id -> report
    extra: list[str] = field(default_factory=list)
    ambiguous: list[str] = field(default_factory=list)
    #: files in the folder that could be samples: an accepted audio format (in any letter case)
    #: or a stimulus' name in another format; 0 means the folder holds no samples at all
    candidates: int = 0

    #: set when no expected sample is where the manifest puts it but audio files are there:
    #: what the layout looks like instead (see ``_layout_hint``)
    layout_hint: str = ""

    @property
    def problems(self) -> list[Problem]:
        """Every problem: the samples', then the extra and the ambiguous files'."""
        out = [p for r in self.samples.values() for p in r.problems]
        out += [Problem(x, "warning", "extra", f"{x}: not a stimulus of the manifest")
                for x in self.extra]
        out += [Problem(x, "warning", "ambiguous", f"{x}: several formats for one stimulus; "
                        f"the first of {', '.join(AUDIO_EXTENSIONS)} is used") for x in self.ambiguous]
        return out

    @property
    def errors(self) -> list[Problem]:
        """The problems that make a sample unusable."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        """The problems worth a look."""
        return [p for p in self.problems if p.severity == "warning"]

    def bad_stimuli(self) -> list[str]:
        """The stimuli whose sample has an error.

        Returns:
            Their ids.
        """
        return [sid for sid, r in self.samples.items() if not r.ok]

    @property
    def ok(self) -> bool:
        """Whether no problem is an error."""
        return not self.errors


def _exists(path: Path) -> bool:
    """Path.exists() that answers False, not PermissionError, inside an unreadable folder."""
    try:
        return path.exists()
    except OSError:
        return False


def sample_path(folder: Path, stimulus_id: str) -> Path | None:
    """The system's file for one stimulus, in any accepted format.

    Args:
        folder: The system's folder.
        stimulus_id: The stimulus.

    Returns:
        The file, or None.
    """
    return find_audio(Path(folder) / stimulus_id)


def check_folder(corpus: Corpus, folder: str | Path, *, stimuli: list[str] | None = None,
                 progress: bool = True) -> FolderCheck:
    """Check every expected sample (or just ``stimuli``) and list files that match nothing.

    Args:
        corpus: The corpus.
        folder: The system's folder.
        stimuli: The stimuli to check, or None for all.
        progress: Whether to show a progress bar.

    Returns:
        What was found: a report per sample, the extra and ambiguous files, and a hint when
        the folder's layout is not the manifest's.
    """
    folder = Path(folder)
    wanted = stimuli or [r.stimulus_id for r in corpus.recordings]
    result = FolderCheck(str(folder), len(wanted))
    for sid in tqdm(wanted, desc="checking samples", unit="file", disable=not progress):
        result.samples[sid] = _sample_report(corpus, folder, sid, result)
    if folder.is_dir():
        known = {r.stimulus_id for r in corpus.recordings}
        _scan_folder(folder, known, result)
        if result.extra and all(not _exists(Path(r.path)) for r in result.samples.values()):
            result.layout_hint = _layout_hint(folder, result.extra, known)
    return result


def _sample_report(corpus: Corpus, folder: Path, sid: str, result: FolderCheck) -> AudioReport:
    """Check the system's sample for the stimulus ``sid``: a broken link, a missing file, or
    the audio's own checks; a sample found in more than one format is added to
    ``result.ambiguous``."""
    path = sample_path(folder, sid)
    ref = corpus.get(sid)
    broken = _broken_link(folder / sid) if path is None else None
    if broken is not None:
        report = AudioReport(str(broken))
        report.problems.append(Problem(report.path, "error", "broken_link",
                                       f"{broken}: broken link: it points to "
                                       f"{os.readlink(broken)}, which does not exist"))
    elif path is None:
        report = AudioReport(str(folder / f"{sid}.wav"))
        report.problems.append(Problem(report.path, "error", "missing",
                                       f"{report.path}: "
                                       f"{missing_audio_message(folder / sid)}"))
    else:
        report = check_audio(path, reference_duration=sf.info(ref.audio_path).duration)
        _check_speech(path, report)
        if sum(_exists(folder / f"{sid}{e}") for e in AUDIO_EXTENSIONS) > 1:
            result.ambiguous.append(str(path))
    return report


def _scan_folder(folder: Path, known: set[str], result: FolderCheck) -> None:
    """Count the folder's candidate samples (audio files, and files named for a stimulus in
    ``known``) into ``result``, and list audio files that match no stimulus as
    ``result.extra``."""
    for path in _visible_files(folder):
        rel = path.relative_to(folder).with_suffix("").as_posix()
        audio = path.suffix.lower() in AUDIO_EXTENSIONS
        if audio or rel in known:
            result.candidates += 1
        if path.is_file() and audio and rel not in known:
            result.extra.append(str(path))


def _visible_files(folder: Path) -> list[Path]:
    """The files and links under ``folder``, sorted, leaving out hidden ones (``.DS_Store``)."""
    return [path for path in sorted(folder.rglob("*"))
            if (path.is_file() or path.is_symlink()) and not path.name.startswith(".")]


def _layout_hint(folder: Path, extra: list[str], known: set[str]) -> str:
    """Why a folder with audio files has none where the manifest puts them: one message, not
    a "missing" row per stimulus plus an "extra" row per file. The usual mistakes are naming
    the folder above the samples' (``adept-eval check out/`` for ``out/my_tts/emotion/...``),
    for which the folder to name instead is given, and a layout of one's own (flat names such
    as ``emotion_fear_ad00_0001.wav``), for which an example of the expected path is."""
    prefixes: dict[str, int] = {}
    for file in extra:
        rel = Path(file).relative_to(folder).with_suffix("").as_posix()
        for sid in known:
            if rel.endswith("/" + sid):
                prefix = rel[: -len(sid) - 1]
                prefixes[prefix] = prefixes.get(prefix, 0) + 1
                break
    example = sorted(known)[0]
    head = (f"{folder}: none of the samples is where the manifest puts it, but "
            f"{len(extra)} audio file(s) are elsewhere")
    if prefixes:
        prefix, count = max(prefixes.items(), key=lambda kv: kv[1])
        return (f"{head}: {count} follow the manifest's layout inside {folder / prefix}; check "
                f"that folder instead (adept-eval check {folder / prefix}, or path="
                f"{folder / prefix} for lm_eval's audio-dir)")
    shown = Path(sorted(extra)[0]).relative_to(folder).as_posix()
    return (f"{head}, e.g. {shown}; each sample goes at {folder}/<output_path> as `adept-eval "
            f"manifest` lists them, in ADEPT's layout: e.g. {folder / example}.wav")


def _broken_link(stem: Path) -> Path | None:
    """A symbolic link named for the stimulus (in an accepted format) whose target is gone."""
    for ext in AUDIO_EXTENSIONS:
        candidate = stem.parent / (stem.name + ext)
        if os.path.islink(candidate) and not _exists(candidate):
            return candidate
    return None


def _check_speech(path: Path, report: AudioReport) -> None:
    """A readable sample that holds no speech (a tone, DC, noise) is an error too; one already
    refused (unreadable, empty, silent, ...) is not refused a second time, so each bad file
    counts once."""
    if any(p.severity == "error" for p in report.problems):
        return
    from adept_eval.signal.speech_presence import no_speech_reason

    try:
        reason = no_speech_reason(path)
    except Exception as exc:  # the audio checks passed; analysis trouble is reported, not raised
        reason = f"could not be analysed ({exc})"
    if reason:
        report.problems.append(Problem(str(path), "error", "no_speech",
                                       f"{path}: no speech ({reason})"))
