"""Real listeners' answers, collected on any listening-test platform, scored by the harness.

The responses file (CSV, or JSONL with the same keys) has one row per answer:

    participant,task,question_id,answer
    p01,adept_emotion_female,adept_emotion_female/ad00_0001/fear,C

``question_id`` is the id adept-eval gives the question (``adept-eval questions`` lists them
with their presentation order) or its blinded id from the same export
(``blinded_question_id``); ``answer`` is the chosen letter (A-E, in that order), the chosen
choice's text, the chosen stimulus id (``emotion/fear/ad00_0001``) or its blinded id
(``blinded_stimuli``), or its subcategory (``fear``). An empty answer is a response with no
valid choice: counted, and wrong. Accuracy is then over all responses, as in the ADEPT
tutorial's step 4.

Blinded ids are recomputed from the real ones (``questions.unblinding``) with the salt the
export used: the public default, or a study's own salt read from the environment variable
that ``salt_env`` names (the salt is private, so it never travels as an option value, which
lm-eval would write into the results).

A ``.json`` file holds a list of such objects (or ``{"responses": [...]}``). Files may be UTF-8
(with or without a byte-order mark), UTF-16 (with a byte-order mark, as Excel's "Unicode text"
writes) or Windows-1252 (Excel's CSV on Windows); the encoding is detected in that order.
Participant ids are compared after removing surrounding whitespace, collapsing inner whitespace
and ignoring letter case (``" P01"`` and ``"p01"`` are one participant), so one person's answer
given twice is caught. The whole file is checked when the task loads, before any audio is
produced; every unusable row is reported with the file name and its line number.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path


from adept_eval.corpora.corpus import Corpus, load_corpus
from adept_eval.errors import ResponsesError
from adept_eval.corpora.questions import (
    DEFAULT_BLIND_SALT,
    LETTERS,
    Question,
    all_questions,
    unblinding,
)
from adept_eval.scoring.listeners import Answer, Listener, Response, register_listener

log = logging.getLogger(__name__)

REQUIRED = ("participant", "question_id", "answer")
BLINDED = re.compile(r"^[qs][0-9a-f]{12}$")  # questions.blinded_id's form


def decode_text(path: Path) -> tuple[str, str]:
    """Read a responses file as text, in the encoding it was saved with (see the module
    docstring): a byte-order mark's, UTF-16 without one, UTF-8, else Windows-1252.

    Args:
        path: The responses file.

    Returns:
        The file's text and the encoding it was read with.

    Raises:
        ResponsesError: The file is missing or unreadable, or is text in none of those
            encodings.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResponsesError(f"{path}: responses file is missing") from None
    except OSError as exc:
        raise ResponsesError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    decoded = _decode_marked(path, raw) or _decode_unmarked_utf16(raw)
    if decoded:
        return decoded
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError as exc:
        raise ResponsesError(f"{path}: not text in UTF-8, UTF-16 or Windows-1252 (byte "
                             f"{raw[exc.start]:#04x} at offset {exc.start}); save it as UTF-8 "
                             f"CSV") from None


def _decode_marked(path: Path, raw: bytes) -> tuple[str, str] | None:
    """``raw`` decoded by its byte-order mark (UTF-8 or UTF-16) and the encoding; None
    without one.

    Raises:
        ResponsesError: The text is not valid in the encoding its mark names.
    """
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):
        if raw.startswith(bom):
            try:
                return raw.decode(encoding), encoding
            except UnicodeDecodeError as exc:
                raise ResponsesError(f"{path}: starts like {encoding} but is not valid "
                                     f"{encoding} at byte {exc.start}") from None
    return None


def _decode_unmarked_utf16(raw: bytes) -> tuple[str, str] | None:
    """``raw`` decoded as UTF-16 without a byte-order mark (ASCII text with every other byte
    zero, the zero first or second) and the encoding; None when it does not look so or does
    not decode."""
    if raw[:1] != b"\0" and raw[1:2] == b"\0" or raw[:1] == b"\0":
        try:
            encoding = "utf-16-le" if raw[1:2] == b"\0" else "utf-16-be"
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            pass
    return None


@dataclass(frozen=True)
class Row:
    """One parsed response row and the line of the file it starts on."""

    line: int
    values: dict


def read_rows(path: Path) -> list[Row]:
    """Read every row of a CSV, JSONL or JSON responses file (by its extension; CSV
    otherwise).

    Args:
        path: The responses file.

    Returns:
        Its rows of named fields, each with its line (or, for JSON, its item's position).

    Raises:
        ResponsesError: The file cannot be read or split into rows of named fields; the
            message names the file and each bad line.
    """
    path = Path(path)
    text, _ = decode_text(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _json_rows(path, text)
    if suffix == ".jsonl":
        return _jsonl_rows(path, text)
    return _csv_rows(path, text)


def _json_rows(path: Path, text: str) -> list[Row]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResponsesError(f"{path}: not JSON ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("responses"), list):
        data = data["responses"]
    if not isinstance(data, list):
        raise ResponsesError(f"{path}: a .json responses file holds a list of response objects "
                             f"(or {{\"responses\": [...]}}), not {_kind(data)}; one object per "
                             f"line is a .jsonl file")
    bad = [f"item {i}: {_kind(x)}, not an object" for i, x in enumerate(data, 1)
           if not isinstance(x, dict)]
    if bad:
        raise ResponsesError(_listing(path, "items are not response objects", bad))
    # a list has no line numbers; report items by their position instead
    return [Row(i, x) for i, x in enumerate(data, 1)]


def _jsonl_rows(path: Path, text: str) -> list[Row]:
    rows, bad = [], []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            bad.append(f"line {i}: not JSON ({exc})")
            continue
        if not isinstance(value, dict):
            bad.append(f"line {i}: {_kind(value)}, not an object with participant, "
                       f"question_id and answer")
            continue
        rows.append(Row(i, value))
    if bad:
        raise ResponsesError(_listing(path, "lines are not response objects", bad))
    return rows


def _csv_rows(path: Path, text: str) -> list[Row]:
    """The rows of a CSV file's ``text``, fields named by its first non-blank row; blank rows
    are skipped.

    Raises:
        ResponsesError: A row runs over several lines, has another field count than the
            header, or the CSV cannot be parsed; every such row is listed.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows, bad = [], []
    header: list[str] | None = None
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                continue
            problem = _csv_row_problem(line, reader.line_num, fields, header)
            if problem:
                bad.append(problem)
            else:
                rows.append(Row(line, dict(zip(header, fields))))
    except csv.Error as exc:
        bad.append(_csv_error(start, exc))
    if bad:
        raise ResponsesError(_listing(path, "lines are not valid CSV rows", bad))
    if header is None:
        return []
    return rows


def _csv_error(line: int, exc: csv.Error) -> str:
    """The problem of the CSV file from ``line`` on, where the reader stopped with ``exc``
    (its "end of data" is a quote never closed)."""
    return f"line {line}: {exc}" + ("; a quote is opened and never closed"
                                   if "end of data" in str(exc) else "")


def _csv_row_problem(line: int, last_line: int, fields: list[str],
                     header: list[str]) -> str | None:
    """What is wrong with the CSV row from ``line`` to ``last_line``: a quoted field running
    over lines (most often a missing closing quote), or a field count other than the
    header's; None when nothing is."""
    if last_line > line:
        return (f"line {line}: a quoted field runs on to line {last_line}; "
                f"is a closing quote missing?")
    if len(fields) != len(header):
        return f"line {line}: {len(fields)} fields, the header has {len(header)}"
    return None


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null",
            bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a value")


def _listing(path: Path, what: str, problems: list[str], limit: int = 25) -> str:
    shown = problems[:limit] + ([f"... {len(problems) - limit} more"]
                                if len(problems) > limit else [])
    return f"{path}: {len(problems)} {what}:\n  " + "\n  ".join(shown)


def _response_rows(path: Path) -> list:
    """The rows of the responses file at ``path``.

    Raises:
        ResponsesError: when it holds no rows or lacks a required column.
    """
    rows = read_rows(path)
    if not rows:
        raise ResponsesError(f"{path}: no responses")
    missing = [c for c in REQUIRED if c not in rows[0].values]
    if missing:
        raise ResponsesError(f"{path}: missing column(s) {', '.join(missing)} "
                             f"(needs {', '.join(REQUIRED)}; found "
                             f"{', '.join(map(str, rows[0].values)) or 'none'})")
    return rows


def participant_key(value) -> str:
    """Key a participant id for comparison.

    Args:
        value: The id as given.

    Returns:
        The id trimmed, inner white space collapsed, case folded.
    """
    return " ".join(str(value).split()).casefold()


def choice_index(question: Question, answer: str) -> int | None:
    """Read a person's answer as the index of the choice it names.

    Args:
        question: The question answered.
        answer: The answer as given: a choice's letter (any case), its text, for a
            multi-stimulus question a stimulus id, or a subcategory.

    Returns:
        The choice's index; None for a blank answer (no answer).

    Raises:
        ValueError: The answer names none of the question's choices.
    """
    given = str(answer).strip()
    if not given:
        return None
    if len(given) == 1 and given.upper() in LETTERS[: question.n_choices]:
        return LETTERS.index(given.upper())
    for i, choice in enumerate(question.choices):
        if given == choice:
            return i
    if given in question.stimuli and question.design == "multi":
        return question.stimuli.index(given)
    if given in question.choice_subcategories:
        return question.choice_subcategories.index(given)
    raise ValueError(given)


def _subcategories_without_responses(questions: list[Question],
                                     covered: list[Question]) -> list[str]:
    """The target subcategories, sorted, of ``questions`` with per-subcategory scores that no
    question of ``covered`` has (none when a question's task is not a known one)."""
    from adept_eval.corpora import spec

    if not all(q.task in spec.TASKS for q in questions):
        return []
    scored = {q.task for q in questions
              if spec.CLASSES[spec.TASKS[q.task].cls.name].has_subcategory_scores}
    return sorted({q.target for q in questions if q.task in scored}
                  - {q.target for q in covered if q.task in scored})


@register_listener("human")
@dataclass
class HumanListener(Listener):
    """People's answers to the questions, read from a listening test's responses file (the
    test ran elsewhere: no sample is heard here)."""

    needs_audio: ClassVar[bool] = False
    per_participant: ClassVar[bool] = True
    responses: str = ""
    #: the environment variable holding the salt given to ``adept-eval questions --salt``
    #: (empty: blinded ids use the public default salt)
    salt_env: str = ""
    corpus: Corpus | None = None
    _by_question: dict[str, list[Response]] = field(init=False, default_factory=dict)

    def __post_init__(self):
        """Read and check the responses file.

        Raises:
            ResponsesError: when no file is named, it holds no responses or lacks a required
                column, or any row is unusable (the message lists every such row).
        """
        if not self.responses:
            raise ResponsesError("the human listener needs a responses file: "
                                 "--metadata listener=human responses=PATH")
        path = Path(self.responses)
        self.corpus = self.corpus or load_corpus()
        questions = {q.question_id: q for qs in all_questions(self.corpus).values() for q in qs}
        blind = unblinding(questions.values(), self._salt())
        rows = _response_rows(path)
        problems: list[str] = []
        seen: dict[tuple[str, str], str] = {}
        spelling: dict[str, str] = {}
        by_q: dict[str, list[Response]] = defaultdict(list)
        for row in rows:
            read = self._read_row(row, questions, blind, seen, spelling)
            if isinstance(read, str):
                problems.append(read)
            else:
                by_q[read[0]].append(read[1])
        if problems:
            raise ResponsesError(_listing(path, "unusable responses", problems))
        self._by_question = dict(by_q)

    def _read_row(self, row, questions: dict[str, Question], blind: dict[str, str],
                  seen: dict[tuple[str, str], str],
                  spelling: dict[str, str]) -> tuple[str, Response] | str:
        """Read one row of the responses file.

        Args:
            row: the row, with its line number.
            questions: question id -> question.
            blind: blinded id -> real id (of a question, a stimulus or an answer).
            seen: (participant key, question id) -> where it was first answered; updated.
            spelling: participant key -> the spelling used downstream (the first seen);
                updated.

        Returns:
            The question id and the response, or the row's problem as text.
        """
        values, where = row.values, f"line {row.line}"
        lacking = [c for c in REQUIRED if values.get(c) is None]
        if lacking:
            return f"{where}: no {', '.join(lacking)}"
        who = " ".join(str(values["participant"]).split())
        if not who:
            return f"{where}: empty participant id"
        question = self._row_question(values, where, questions, blind)
        if isinstance(question, str):
            return question
        qid = question.question_id
        key = (participant_key(who), qid)
        if key in seen:
            return (f"{where}: participant {who!r} answered {qid!r} again (first "
                    f"on {seen[key]})")
        seen[key] = where
        who = spelling.setdefault(key[0], who)  # one spelling per participant downstream
        answer = str(values["answer"]).strip()
        try:
            return qid, Response(choice_index(question, blind.get(answer, answer)), who)
        except ValueError:
            return (f"{where}: answer {values.get('answer')!r} is none of "
                    f"{', '.join(LETTERS[:question.n_choices])} or a choice of {qid!r}")

    def _row_question(self, values: dict, where: str, questions: dict[str, Question],
                      blind: dict[str, str]) -> Question | str:
        """The question a row answers (its id may be blinded), or the row's problem as text:
        an unknown id, or a task that is not the question's."""
        given = str(values["question_id"]).strip()
        qid = blind.get(given, given)  # a blinded question id -> the real one
        question = questions.get(qid)
        if question is None:
            return f"{where}: unknown question_id {given!r}{self._blind_hint(given, blind)}"
        task = str(values.get("task") or "").strip()
        if task and task != question.task:
            return f"{where}: task {task!r} does not match {qid!r}"
        return question

    def _salt(self) -> str:
        """The salt the export's blinded ids were made with: the environment variable
        ``salt_env`` names, or the public default salt without one.

        Raises:
            ResponsesError: ``salt_env`` names a variable that is not set.
        """
        if not self.salt_env:
            return DEFAULT_BLIND_SALT
        salt = os.environ.get(self.salt_env, "")
        if not salt:
            raise ResponsesError(f"salt_env={self.salt_env}: the environment variable "
                                 f"{self.salt_env} is not set (it should hold the salt given to "
                                 f"`adept-eval questions --salt`)")
        return salt

    def _blind_hint(self, value: str, blind: dict[str, str]) -> str:
        """Why an unknown question id that looks blinded matched nothing."""
        if value in blind:
            return (f" (the blinded id of the stimulus {blind[value]}, not of a question: use "
                    f"the export's blinded_question_id)")
        if not BLINDED.match(value):
            return ""
        if self.salt_env:
            return (f" (it looks like a blinded id, but none of this corpus' questions has it "
                    f"under the salt in ${self.salt_env}: was the export made with another "
                    f"--salt?)")
        return (" (it looks like a blinded id, but none of this corpus' questions has it under "
                "the default salt: if the export used --salt, name the environment variable "
                "holding it with --metadata salt_env=VAR)")

    def identity(self) -> dict:
        """Describe the scorer for the run's identity.

        Returns:
            The listener's name, the responses file's name, and how many participants and
            responses it holds.
        """
        n = sum(len(v) for v in self._by_question.values())
        participants = {r.participant for v in self._by_question.values() for r in v}
        return {"listener": self.name, "responses_file": Path(self.responses).name,
                "participants": len(participants), "responses": n}

    def answer_many(self, asked: list[tuple[Question, dict[str, str]]]) -> list[Answer]:
        """Give every question its responses, warning once (one log line) when the file
        answers only some of the questions asked (a pilot, a file of another task, a partial
        export).

        Args:
            asked: (question, stimulus id -> sample path) per question.

        Returns:
            One answer per question, in order.
        """
        warning = self.coverage_warning([q for q, _ in asked])
        if warning:
            log.warning(warning)
        return [self.answer(q, samples) for q, samples in asked]

    def coverage_warning(self, questions: list[Question]) -> str | None:
        """Say what a run should be told when the responses file does not cover ``questions``.

        Args:
            questions: The questions asked.

        Returns:
            How many questions the file answers of how many, and which subcategories have no
            responses at all (their ``acc_<subcategory>`` is then undefined: NaN in lm-eval's
            table); None when every question has responses.
        """
        covered = [q for q in questions if self._by_question.get(q.question_id)]
        if len(covered) == len(questions):
            return None
        tasks = sorted({q.task for q in questions})
        empty = _subcategories_without_responses(questions, covered)
        subs = (f"; no responses at all for {', '.join(empty)} (accuracy undefined: NaN in "
                f"lm-eval's table)" if empty else "")
        return (f"warning: {Path(self.responses).name} has responses to {len(covered)} of the "
                f"{len(questions)} questions of {', '.join(tasks)}: the "
                f"{len(questions) - len(covered)} without responses are left out of n and the "
                f"accuracy{subs}")

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """People's answers to one question (no sample is heard: ``samples`` is unused).

        Args:
            question: The question.
            samples: Stimulus id -> sample path; ignored.

        Returns:
            Every participant's response, or none (with a note) when nobody answered it.
        """
        responses = tuple(self._by_question.get(question.question_id, ()))
        if not responses:
            return Answer((), "ok", detail="no responses to this question")
        return Answer(responses, "ok")
