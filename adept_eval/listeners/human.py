"""Real listeners' answers, collected on any listening-test platform, scored by the harness.

The responses file (CSV, or JSONL with the same keys) has one row per answer:

    participant,task,question_id,answer
    p01,adept_emotion_female,adept_emotion_female/ad00_0001/fear,C

``question_id`` is the id adept-eval gives the question (``adept-eval questions`` lists them
with their presentation order); ``answer`` is the chosen letter (A-E, in that order), the
chosen choice's text, the chosen stimulus id (``emotion/fear/ad00_0001``) or its subcategory
(``fear``). An empty answer is a response with no valid choice: counted, and wrong.
Accuracy is then over all responses, as in the ADEPT tutorial's step 4.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..corpus import Corpus, load_corpus
from ..questions import LETTERS, Question, all_questions
from . import Answer, Listener, Response, register_listener

REQUIRED = ("participant", "question_id", "answer")


class ResponsesError(ValueError):
    """The responses file is unusable; the message names the file and the rows."""


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        raise ResponsesError(f"{path}: responses file is missing")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise ResponsesError(f"{path}:{i}: not JSON ({exc})") from None
        return rows
    return list(csv.DictReader(text.splitlines()))


def choice_index(question: Question, answer: str) -> int | None:
    a = str(answer).strip()
    if not a:
        return None
    if len(a) == 1 and a.upper() in LETTERS[: question.n_choices]:
        return LETTERS.index(a.upper())
    for i, c in enumerate(question.choices):
        if a == c:
            return i
    if a in question.stimuli and question.design == "multi":
        return question.stimuli.index(a)
    if a in question.choice_subcategories:
        return question.choice_subcategories.index(a)
    raise ValueError(a)


@register_listener("human")
@dataclass
class HumanListener(Listener):
    needs_audio = False  # the listening test was run elsewhere; only its answers are scored
    responses: str = ""
    corpus: Corpus | None = None
    _by_question: dict[str, list[Response]] = field(init=False, default_factory=dict)

    def __post_init__(self):
        if not self.responses:
            raise ResponsesError("the human listener needs a responses file: "
                                 "--metadata listener=human responses=PATH")
        path = Path(self.responses)
        self.corpus = self.corpus or load_corpus()
        questions = {q.question_id: q for qs in all_questions(self.corpus).values() for q in qs}
        rows = read_rows(path)
        if not rows:
            raise ResponsesError(f"{path}: no responses")
        missing = [c for c in REQUIRED if c not in rows[0]]
        if missing:
            raise ResponsesError(f"{path}: missing column(s) {', '.join(missing)} "
                                 f"(needs {', '.join(REQUIRED)})")
        problems, seen = [], set()
        by_q: dict[str, list[Response]] = defaultdict(list)
        for i, row in enumerate(rows, 2 if path.suffix.lower() == ".csv" else 1):
            qid, who = str(row.get("question_id", "")).strip(), str(row.get("participant", ""))
            q = questions.get(qid)
            if q is None:
                problems.append(f"row {i}: unknown question_id {qid!r}")
                continue
            if row.get("task") and row["task"] != q.task:
                problems.append(f"row {i}: task {row['task']!r} does not match {qid!r}")
                continue
            if (who, qid) in seen:
                problems.append(f"row {i}: participant {who!r} answered {qid!r} twice")
                continue
            seen.add((who, qid))
            try:
                by_q[qid].append(Response(choice_index(q, row.get("answer", "")), who))
            except ValueError:
                problems.append(f"row {i}: answer {row.get('answer')!r} is none of "
                                f"{', '.join(LETTERS[:q.n_choices])} or a choice of {qid!r}")
        if problems:
            shown = problems[:25] + ([f"... {len(problems) - 25} more"] if len(problems) > 25 else [])
            raise ResponsesError(f"{path}: {len(problems)} unusable responses:\n  " + "\n  ".join(shown))
        self._by_question = dict(by_q)

    def identity(self) -> dict:
        n = sum(len(v) for v in self._by_question.values())
        participants = {r.participant for v in self._by_question.values() for r in v}
        return {"listener": self.name, "responses_file": Path(self.responses).name,
                "participants": len(participants), "responses": n}

    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        responses = tuple(self._by_question.get(question.question_id, ()))
        if not responses:
            return Answer((), "ok", detail="no responses to this question")
        return Answer(responses, "ok")
