"""ADEPT on disk: locate, download, verify, extract, and parse the layout into Recording records.

Where the corpus comes from, first match wins:

1. an explicit path (``--corpus`` on the command line, ``corpus=`` in Python);
2. ``ADEPT_EVAL_CORPUS``: a local ``ADEPT.zip`` or an extracted folder (offline use);
3. the cache, ``ADEPT_EVAL_HOME`` or else ``$HF_HOME/adept_eval`` (~/.cache/huggingface/adept_eval);
4. a download of ``ADEPT.zip`` from Zenodo record 5117102 into that cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from filelock import FileLock

from adept_eval.corpora import spec, zenodo
from adept_eval.errors import CorpusError
from adept_eval.paths import cache_home

log = logging.getLogger(__name__)

PROMPTS_FILE = "adept_prompts.json"
WAV_DIR = "wav_44khz"
TXT_DIR = "txt"
RECORD_FILE = "zenodo_record.json"
SINGLE_STIMULUS_CLASSES = tuple(c for c in spec.CLASS_ORDER if spec.CLASSES[c].design == "single")


@dataclass(frozen=True)
class Recording:
    """One natural ADEPT recording: a sentence in one subcategory of one class, one speaker."""

    speaker: str  # "female" | "male"
    speaker_id: str  # "ad00" | "ad01"
    cls: str
    subcategory: str
    sentence_id: str  # "0400"
    text: str
    audio_path: str  # absolute path of the wav

    @property
    def key(self) -> str:
        """The file stem, shared by every subcategory of a sentence: ``ad00_0400``."""
        return f"{self.speaker_id}_{self.sentence_id}"

    @property
    def stimulus_id(self) -> str:
        """Relative path without extension; also where a system's sample for it lives."""
        return f"{self.cls}/{self.subcategory}/{self.key}"


def expected_stimuli() -> list[tuple[str, str, str, str]]:
    """The recordings ADEPT holds, from its specification.

    Returns:
        (speaker, class, subcategory, sentence_id) of all 195 recordings, in canonical order.
    """
    out = []
    for speaker in spec.SPEAKERS:
        for cname in spec.CLASS_ORDER:
            cls = spec.CLASSES[cname]
            for sub in cls.subcategories_for(speaker):
                for sid in cls.sentence_ids():
                    out.append((speaker, cname, sub, sid))
    return out


class Corpus:
    """A validated, extracted ADEPT folder."""

    def __init__(self, root: str | Path, source: str | None = None):
        """Read and validate the ADEPT layout under ``root``.

        Args:
            root: The folder holding adept_prompts.json.
            source: What to name the corpus by in messages (the zip or folder the user gave),
                or None for ``root``.

        Raises:
            CorpusError: The layout is incomplete or malformed; the message lists every
                problem.
        """
        self.root = Path(root).resolve()
        self.source = source or str(self.root)
        self.prompts: dict[str, dict[str, dict[str, str]]] = {}
        self.recordings: list[Recording] = []
        self._load()
        self._by_id = {r.stimulus_id: r for r in self.recordings}

    # ------------------------------------------------------------------ parsing
    def _load(self) -> None:
        """Read the prompts and the recordings, checking the whole layout.

        Raises:
            CorpusError: when a top-level file or folder is missing, the prompts are
                unreadable, or anything else is wrong; the message lists every problem.
        """
        prompts_path = self.root / PROMPTS_FILE
        wav_root, txt_root = self.root / WAV_DIR, self.root / TXT_DIR
        problems = [f"missing: {needed}" for needed in (prompts_path, wav_root, txt_root)
                    if not needed.exists()]
        if problems:
            raise CorpusError(self._message(problems))
        problems += self._read_prompts(prompts_path)

        expected = expected_stimuli()
        present_wav = _relative_files(wav_root)
        present_txt = _relative_files(txt_root)
        problems += _file_set_problems(expected, present_wav, present_txt)
        for speaker, cname, sub, sid in expected:
            rel = f"{cname}/{sub}/{spec.SPEAKERS[speaker]}_{sid}"
            if f"{rel}.wav" in present_wav and f"{rel}.txt" in present_txt:
                problems += self._read_recording(speaker, cname, sub, sid, rel)
        problems += self._check_prompts()
        if problems:
            raise CorpusError(self._message(problems))

    def _read_prompts(self, prompts_path: Path) -> list[str]:
        """Read the prompts file into ``self.prompts`` (``{}`` when it is no JSON object).

        Returns:
            The problems found: not an object, keys given more than once.

        Raises:
            CorpusError: when the file cannot be read or is not JSON.
        """
        duplicates: list[str] = []
        try:
            self.prompts = json.loads(prompts_path.read_text(encoding="utf-8"),
                                      object_pairs_hook=_pairs_noting_duplicates(duplicates))
        except (OSError, ValueError) as exc:
            raise CorpusError(self._message([f"unreadable: {prompts_path} ({exc})"])) from None
        problems = []
        if not isinstance(self.prompts, dict):
            problems.append(f"{PROMPTS_FILE}: should be a JSON object of classes, got "
                            f"{_json_type(self.prompts)}")
            self.prompts = {}
        problems += [f"{PROMPTS_FILE}: key {k!r} appears more than once" for k in duplicates]
        return problems

    def _read_recording(self, speaker, cname: str, sub: str, sid: str, rel: str) -> list[str]:
        """Read one recording's transcript and add the recording to ``self.recordings``.

        Returns:
            The problems found: an empty audio file or transcript, an unreadable transcript
            (the recording is then left out).
        """
        problems = []
        wav, txt = self.root / WAV_DIR / f"{rel}.wav", self.root / TXT_DIR / f"{rel}.txt"
        try:
            if wav.stat().st_size == 0:
                problems.append(f"empty: {WAV_DIR}/{rel}.wav")
            text = " ".join(txt.read_text(encoding="utf-8").split())
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"unreadable: {TXT_DIR}/{rel}.txt ({exc})")
            return problems
        if not text:
            problems.append(f"empty: {TXT_DIR}/{rel}.txt")
        self.recordings.append(Recording(speaker, spec.SPEAKERS[speaker], cname, sub, sid,
                                         text, str(wav)))
        return problems

    def _check_prompts(self) -> list[str]:
        """Check the answer options of every single-stimulus class.

        Returns:
            The problems found: a class or sentence without options, an option missing,
            not text, or the same text as another option of its sentence.
        """
        problems = []
        for cname in SINGLE_STIMULUS_CLASSES:
            cls = spec.CLASSES[cname]
            block = self.prompts.get(cname)
            if not isinstance(block, dict):
                problems.append(f"{PROMPTS_FILE}: no entry for class {cname!r}" if block is None
                                else f"{PROMPTS_FILE}: {cname}: should be an object of sentences, "
                                f"got {_json_type(block)}")
                continue
            for speaker in spec.SPEAKERS:
                for sid in cls.sentence_ids():
                    key = f"{spec.SPEAKERS[speaker]}_{sid}"
                    problems += _option_problems(cname, key, block.get(key),
                                                 cls.answer_subcategories(speaker))
        return problems

    def verify_audio(self, progress: bool = False) -> None:
        """Decode every natural recording once, so a corpus fault is found at ``prepare`` and
        never charged to a system being evaluated.

        Args:
            progress: Whether to show a progress bar.

        Raises:
            CorpusError: Listing each recording that cannot be decoded or holds no signal.
        """
        from tqdm.auto import tqdm

        from adept_eval.errors import AudioError
        from adept_eval.signal.audio import read_audio, signal_problems

        problems = []
        for r in tqdm(self.recordings, desc="decoding ADEPT", unit="file", disable=not progress):
            rel = Path(r.audio_path).relative_to(self.root).as_posix()
            try:
                audio = read_audio(r.audio_path)
            except AudioError as exc:
                problems.append(f"undecodable: {rel}: {str(exc).split(': ', 1)[-1]}")
                continue
            problems += [f"no signal: {rel}: {msg.split(': ', 1)[-1]}"
                         for _, msg in signal_problems(audio)]
        if problems:
            raise CorpusError(self._message(problems))

    def _message(self, problems: list[str]) -> str:
        head = f"ADEPT corpus at {self.source} is incomplete or malformed ({len(problems)} problems):"
        return "\n  ".join([head, *problems])

    # ------------------------------------------------------------------ access
    def get(self, stimulus_id: str) -> Recording:
        """The recording of one stimulus.

        Args:
            stimulus_id: Its ``Recording.stimulus_id``.

        Returns:
            The recording.

        Raises:
            KeyError: The corpus has no such stimulus.
        """
        return self._by_id[stimulus_id]

    def find(self, speaker: str, cls: str, subcategory: str, sentence_id: str) -> Recording:
        """The recording of one speaker, class, subcategory and sentence.

        Args:
            speaker: "female" or "male".
            cls: The class.
            subcategory: The subcategory.
            sentence_id: The sentence's number, e.g. "0100".

        Returns:
            The recording.

        Raises:
            KeyError: The corpus has no such recording.
        """
        return self._by_id[f"{cls}/{subcategory}/{spec.SPEAKERS[speaker]}_{sentence_id}"]

    def answer_options(self, cls: str, key: str) -> dict[str, str]:
        """adept_prompts.json's options for a single-stimulus sentence.

        Args:
            cls: The class, e.g. "topical_emphasis".
            key: The sentence's key, e.g. "ad00_0100".

        Returns:
            Subcategory -> option text, e.g. {"beginning": "WHO eats avocado with toast?", ...}.
        """
        return {k: str(v).strip() for k, v in self.prompts[cls][key].items()}

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over the prompts file and every recording's bytes and text: the corpus identity
        that travels with results, so scores from different corpus copies are never mixed.
        Remembered per machine while no file changes (``remembered_digest``): hashing the
        corpus would cost ~0.1 s of every run."""
        files = [self.root / PROMPTS_FILE, *(Path(r.audio_path) for r in self.recordings)]
        texts = hashlib.sha256("\0".join(f"{r.stimulus_id}\0{r.text}"
                                          for r in self.recordings).encode()).hexdigest()
        return remembered_digest(f"corpus-sha256-{texts[:16]}", files, self._content_sha256)

    def _content_sha256(self) -> str:
        digest = hashlib.sha256()
        digest.update((self.root / PROMPTS_FILE).read_bytes())
        for rec in self.recordings:
            digest.update(rec.stimulus_id.encode())
            digest.update(rec.text.encode())
            with open(rec.audio_path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        return digest.hexdigest()

    @cached_property
    def zenodo_record(self) -> dict | None:
        """The Zenodo record JSON saved at download time (licence, title), if known."""
        for candidate in (self.root / RECORD_FILE, self.root.parent / RECORD_FILE):
            if candidate.exists():
                try:
                    record = json.loads(candidate.read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    log.warning("%s: unreadable (%s); the Zenodo record is left out", candidate,
                                exc)
                    return None
                return record if isinstance(record, dict) else None
        return None

    def __len__(self) -> int:
        return len(self.recordings)

    def __repr__(self) -> str:
        return f"Corpus({str(self.root)!r}, {len(self)} recordings)"


def _json_type(value) -> str:
    return {dict: "an object", list: "a list", type(None): "null", str: "a string",
            bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a value")


def _pairs_noting_duplicates(found: list[str]):
    """A json ``object_pairs_hook`` that builds the dict and notes keys given twice (JSON
    parsers otherwise keep the last silently, hiding a duplicated answer option)."""
    def hook(pairs):
        out: dict = {}
        for k, v in pairs:
            if k in out:
                found.append(k)
            out[k] = v
        return out
    return hook


def _option_problems(cname: str, key: str, options, subs) -> list[str]:
    """The problems of one sentence's answer options ``options`` (subcategory -> text) in the
    class ``cname``: none given, not an object, an option of ``subs`` missing or not text, or
    two options a listener could not tell apart."""
    if not isinstance(options, dict):
        return [f"{PROMPTS_FILE}: {cname}/{key}: no answer options" if options is None else
                f"{PROMPTS_FILE}: {cname}/{key}: answer options should be "
                f"an object, got {_json_type(options)}"]
    problems = []
    seen: dict[str, str] = {}
    for sub in subs:
        value = options.get(sub)
        where = f"{PROMPTS_FILE}: {cname}/{key}/{sub}"
        if isinstance(value, (dict, list, bool)):
            problems.append(f"{where}: should be the option's text, got {_json_type(value)}")
        elif value is None or not str(value).strip():
            problems.append(f"{PROMPTS_FILE}: {cname}/{key}: no option {sub!r}")
        else:
            text = " ".join(str(value).split())
            if text in seen:
                problems.append(f"{where}: same text as option {seen[text]!r} ({text!r}); a "
                                f"listener could not tell them apart")
            seen.setdefault(text, sub)
    return problems


def _file_set_problems(expected, present_wav: set[str], present_txt: set[str]) -> list[str]:
    """The audio and transcript files missing for the ``expected`` stimuli, then those present
    that no stimulus expects, one problem each."""
    wanted_wav = {f"{cname}/{sub}/{spec.SPEAKERS[speaker]}_{sid}.wav"
                  for speaker, cname, sub, sid in expected}
    wanted_txt = {wav[:-4] + ".txt" for wav in wanted_wav}
    return ([f"missing: {WAV_DIR}/{p}" for p in sorted(wanted_wav - present_wav)]
            + [f"missing: {TXT_DIR}/{p}" for p in sorted(wanted_txt - present_txt)]
            + [f"unexpected: {WAV_DIR}/{p}" for p in sorted(present_wav - wanted_wav)]
            + [f"unexpected: {TXT_DIR}/{p}" for p in sorted(present_txt - wanted_txt)])


def _relative_files(root: Path) -> set[str]:
    """Files under root as posix relative paths, skipping hidden files and macOS debris."""
    out = set()
    if not root.is_dir():
        return out
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not any(p.startswith(".") or p == "__MACOSX" for p in rel.parts):
            out.add(rel.as_posix())
    return out


# ---------------------------------------------------------------------- zip handling
def find_root(folder: Path) -> Path:
    """The folder holding adept_prompts.json: the folder itself or one wrapper level below.

    Args:
        folder: An extracted ADEPT folder.

    Returns:
        The ADEPT root.

    Raises:
        CorpusError: No root, or several, are found.
    """
    if (folder / PROMPTS_FILE).exists():
        return folder
    candidates = [p.parent for p in folder.glob(f"*/{PROMPTS_FILE}")]
    candidates = [c for c in candidates if c.name != "__MACOSX"]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CorpusError(f"{folder}: no {PROMPTS_FILE} found (looked in the folder and one "
                          f"level below); is this an extracted ADEPT.zip?")
    raise CorpusError(f"{folder}: several ADEPT roots found: {', '.join(map(str, candidates))}")


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member must not be extracted (an absolute path, a drive, a ``..`` part, a
    symbolic link), or None when it is safe."""
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    mode = (info.external_attr >> 16) & 0o170000
    if name.startswith(("/", "\\")) or (parts and parts[0].endswith(":")) or ".." in parts:
        return f"unsafe path: {name}"
    if mode == 0o120000:
        return f"symbolic link: {name}"
    return None


def safe_extract(zip_path: Path, dest: Path) -> Path:
    """Extract a zip, refusing absolute paths, '..' members and links; return the ADEPT root.

    Extraction goes to a temporary sibling first and is renamed into place, so an interrupted
    extraction never leaves a half-written corpus behind.

    Args:
        zip_path: The zip.
        dest: The folder to extract into (replaced when it exists).

    Returns:
        The ADEPT root inside ``dest``.

    Raises:
        CorpusError: The zip is unreadable or corrupt, has unsafe members, or holds no single
            ADEPT root.
    """
    zip_path, dest = Path(zip_path), Path(dest)
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CorpusError(f"{zip_path}: not a readable zip archive ({exc})") from None
    with zf:
        bad = [problem for problem in map(_unsafe_member, zf.infolist()) if problem]
        if bad:
            raise CorpusError(f"{zip_path}: refusing to extract ({len(bad)} unsafe members):\n  "
                              + "\n  ".join(bad))
        corrupt = zf.testzip()
        if corrupt is not None:
            raise CorpusError(f"{zip_path}: corrupt member {corrupt} (CRC mismatch)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest.parent))
        try:
            tmp.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would hide a shared cache
            zf.extractall(tmp)
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return find_root(dest)


def _umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _lock(path: Path) -> FileLock:
    """An inter-process lock next to ``path``: one process extracts or downloads, the others
    wait for it and then use its result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock")


def _extracted_dir_for(zip_path: Path) -> Path:
    """The cache folder a zip is extracted into, named by the zip's md5."""
    digest = remembered_digest("zip-md5", [zip_path], lambda: zenodo.md5sum(zip_path))
    return cache_home() / "extracted" / digest[:16]


def remembered_digest(kind: str, files: list[Path], compute) -> str:
    """``compute()`` (a hex digest of ``files``' contents), remembered in the cache under the
    files' resolved paths, inodes, sizes, modification and change times: an unchanged corpus
    is hashed once per machine rather than on every run, and any change to a file hashes it
    again - a file rewritten or replaced in place gets a new change time even when a tool
    restores its size and modification time (an archive extracted over it, ``cp -p``). A
    cache that cannot be written only means hashing every time.

    Args:
        kind: What the digest is (part of the note's name), e.g. "zip-md5".
        files: The files it is computed from.
        compute: Computes the digest.

    Returns:
        The digest.

    Raises:
        OSError: A file cannot be ``stat``-ed.
    """
    signature = hashlib.sha256(kind.encode())
    for file in files:
        st = os.stat(file)
        signature.update(f"{Path(file).resolve()}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}"
                         f"\0{st.st_ctime_ns}\n".encode())
    note = cache_home() / "digests" / f"{kind}-{signature.hexdigest()[:32]}"
    try:
        value = note.read_text(encoding="ascii").strip()
        if 32 <= len(value) <= 128 and all(c in "0123456789abcdef" for c in value):
            return value
    except (OSError, UnicodeDecodeError):
        pass
    value = compute()
    try:
        note.parent.mkdir(parents=True, exist_ok=True)
        tmp = note.with_name(f"{note.name}.{os.getpid()}.tmp")
        tmp.write_text(value, encoding="ascii")
        os.replace(tmp, note)
    except OSError:
        pass
    return value


def open_path(path: str | Path, *, progress: bool = False) -> Corpus:
    """A zip (extracted into the cache once, under a file lock so parallel first runs share
    one extraction, and every recording decoded once) or a folder holding the ADEPT layout.

    The extracted copy is the cache's, made from the zip: when it fails validation after it
    passed (a file deleted from it by hand, a disk error), it is extracted again from the zip,
    with a one-line warning naming the folder, rather than reported as a fault of the zip,
    which is intact (and which ``prepare --refetch`` refuses to replace when it did not
    download it). Only a zip that fails afresh is reported, as the zip's own fault.

    Args:
        path: The zip or folder.
        progress: Whether to show progress while decoding.

    Returns:
        The corpus.

    Raises:
        CorpusError: ``path`` does not exist, or the corpus is incomplete or malformed.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder")
    if path.is_dir():
        return _decoded_once(Corpus(find_root(path), source=str(path)), progress)
    target = _extracted_dir_for(path)
    marker = target / ".complete"
    with _lock(target):
        if marker.exists():
            try:
                corpus = _decoded_once(Corpus(find_root(target), source=str(path)), progress)
                return _with_record(corpus, path, target)
            except CorpusError as exc:  # damaged since it passed: the zip is the source of truth
                log.warning("%s: the cache's copy extracted from %s was damaged since it was "
                            "verified (%s); extracting it again from the zip", target, path,
                            _first_problem(exc))
                marker.unlink()
        corpus = _decoded_once(Corpus(safe_extract(path, target), source=str(path)), progress)
        marker.touch()  # only once the copy passed: a marked copy that fails was damaged since
        return _with_record(corpus, path, target)


def _first_problem(exc: CorpusError) -> str:
    """A corpus error's first problem and how many more, on one line (the full message lists
    each on its own line)."""
    lines = [line.strip() for line in str(exc).splitlines()]
    problems = lines[1:] or lines
    return problems[0] + (f" and {len(problems) - 1} more" if len(problems) > 1 else "")


def _decoded_once(corpus: Corpus, progress: bool) -> Corpus:
    """Decode every recording the first time this exact corpus (by its sha256) is opened;
    a stamp in the cache remembers that it passed, so later runs only hash it."""
    stamp = cache_home() / "verified" / corpus.fingerprint
    if not stamp.exists():
        corpus.verify_audio(progress=progress)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    return corpus


def _with_record(corpus: Corpus, zip_path: Path, target: Path) -> Corpus:
    """``corpus``, with the Zenodo record saved beside the zip copied into its extracted
    folder (once)."""
    record = zip_path.with_name(RECORD_FILE)
    if record.exists() and not (target / RECORD_FILE).exists():
        shutil.copy(record, target / RECORD_FILE)
    return corpus


def refetch_corpus(corpus: str | Path | None = None, *, download: bool = True,
                   progress: bool = True) -> Path:
    """Download ADEPT.zip again and forget the cache's extracted copy of the old one: what
    ``adept-eval prepare --refetch`` does when the cached copy was damaged after it was verified
    (a disk error, a file deleted by hand). A zip that is no longer readable is extracted under
    a new name anyway (its digest changed); an intact zip whose extracted copy lost a file keeps
    its name, so that copy is removed first.

    Args:
        corpus: The corpus the user names (refused: ``load_corpus`` would use it instead).
        download: Whether downloading is allowed (refused without).
        progress: Whether to show a progress bar.

    Returns:
        The new zip's path.

    Raises:
        CorpusError: A corpus is named (``corpus`` or ``ADEPT_EVAL_CORPUS``), or downloading
            is off.
        DownloadError: The download fails or does not verify.
    """
    named = corpus or os.environ.get("ADEPT_EVAL_CORPUS")
    if named:
        zipped = Path(named).expanduser().is_file()
        raise CorpusError(f"refetching downloads the cache's copy of ADEPT again; the corpus in "
                          f"use is {named} (--corpus or ADEPT_EVAL_CORPUS), which adept-eval does "
                          "not download" + ("; the copy it extracts from that zip into the "
                                            "cache is extracted again by itself when found "
                                            "damaged" if zipped else ""))
    if not download:
        raise CorpusError("refetching downloads ADEPT again: it cannot be used with "
                          "--no-download")
    cached_zip = cache_home() / spec.ZENODO_FILE_KEY
    if cached_zip.exists():
        extracted = _extracted_dir_for(cached_zip)
        with _lock(extracted):
            shutil.rmtree(extracted, ignore_errors=True)
    return download_corpus(force=True, progress=progress)


def download_corpus(*, force: bool = False, progress: bool = True) -> Path:
    """Fetch ADEPT.zip from Zenodo into the cache, verified.

    Args:
        force: Download again even when the cached zip is there.
        progress: Whether to show a progress bar.

    Returns:
        The zip's path.

    Raises:
        DownloadError: The download fails or does not verify.
    """
    home = cache_home()
    remote = zenodo.describe(spec.ZENODO_RECORD_ID, spec.ZENODO_FILE_KEY)
    dest = home / spec.ZENODO_FILE_KEY
    with _lock(dest):  # parallel first runs: one downloads, the others find the verified file
        if force and dest.exists():
            dest.unlink()
        zenodo.download(remote, dest, progress=progress)
        zenodo.save_record(remote, home / RECORD_FILE)
    return dest


def load_corpus(corpus: str | Path | None = None, *, download: bool = True,
                progress: bool = True) -> Corpus:
    """Find ADEPT as the module docstring describes and return it validated.

    Args:
        corpus: A zip or folder to use, or None for ``ADEPT_EVAL_CORPUS`` or the cache.
        download: Whether ADEPT may be downloaded when the cache lacks it.
        progress: Whether to show progress bars.

    Returns:
        The corpus.

    Raises:
        CorpusError: The corpus is missing (and may not be downloaded), incomplete or
            malformed.
        DownloadError: The download fails or does not verify.
    """
    explicit = corpus or os.environ.get("ADEPT_EVAL_CORPUS")
    if explicit:
        return open_path(explicit, progress=progress)
    home = cache_home()
    cached_zip = home / spec.ZENODO_FILE_KEY
    if cached_zip.exists():
        try:
            return open_path(cached_zip, progress=progress)
        except CorpusError as exc:  # the copy was verified when downloaded: damaged since
            raise CorpusError(f"{exc} - in the copy of ADEPT that adept-eval keeps in its cache "
                              f"({home}); `adept-eval prepare --refetch` downloads and extracts "
                              "it again") from None
    if not download:
        raise CorpusError(f"ADEPT is not in the cache ({home}) and downloading is off; set "
                          f"ADEPT_EVAL_CORPUS to a local ADEPT.zip or extracted folder")
    return open_path(download_corpus(progress=progress), progress=progress)
