"""One participant's way through a test: stages, the next item, and checked submissions.

Stages, in order: ``consent`` -> ``headphone`` -> ``question`` (one per item of the plan) ->
``done``; a failed headphone check ends at ``screened_out``. Every submission is checked against
the participant's own plan and stage: an item that is not theirs, not the current one, answered
already, or answered before every sample was played through is refused with a reason, and
nothing is stored.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from .design import HEADPHONE_PASS, Item, TestConfig, item_from, plan_for
from .store import ParticipantRow, ResponseRow, Store

PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class Refused(ValueError):
    """A submission that is not accepted; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def clean_participant_id(value) -> str:
    """The participant id as given by the platform (Prolific, MTurk...), or Refused: letters,
    digits, '-' and '_' only, at most 64 characters."""
    pid = str(value or "").strip()
    if not PARTICIPANT_ID.match(pid):
        raise Refused("participant id must be 1-64 letters, digits, '-' or '_'")
    return pid


@dataclass(frozen=True)
class Progress:
    done: int
    total: int


class Sessions:
    """The test's participants, backed by the store; plans are parsed once and kept."""

    def __init__(self, config: TestConfig, store: Store):
        self.config = config
        self.store = store
        self._plans: dict[str, tuple[Item, ...]] = {}

    def items(self, row: ParticipantRow) -> tuple[Item, ...]:
        items = self._plans.get(row.participant)
        if items is None:  # plans never change once drawn: parse each once
            items = self._plans[row.participant] = tuple(item_from(d) for d in row.plan["items"])
        return items

    def start(self, participant: str) -> ParticipantRow:
        pid = clean_participant_id(participant)
        return self.store.create_participant(pid, lambda arrival: plan_for(self.config, pid,
                                                                           arrival))

    def authenticate(self, participant: str, token: str) -> ParticipantRow:
        import hmac

        row = self.store.participant(str(participant or ""))
        if row is None or not hmac.compare_digest(row.token.encode(), str(token or "").encode()):
            raise Refused("unknown participant or session token", 403)
        return row

    # ---------------------------------------------------------------- state
    def stage(self, row: ParticipantRow, answered: set[str] | None = None) -> str:
        if row.consented is None:
            return "consent"
        if row.headphone_passed is None:
            return "headphone"
        if not row.headphone_passed:
            return "screened_out"
        if row.completed is not None:
            return "done"
        answered = self.store.answered_items(row.participant) if answered is None else answered
        return "done" if len(answered) >= len(self.items(row)) else "question"

    def state(self, row: ParticipantRow) -> dict:
        """What the browser needs to show the participant's current page."""
        answered = self.store.answered_items(row.participant)
        items = self.items(row)
        stage = self.stage(row, answered)
        out = {"stage": stage, "title": self.config.title,
               "progress": {"done": len(answered), "total": len(items)}}
        if stage == "headphone":
            out["headphone"] = {"calibration": audio_url(self.config.calibration_token),
                                "trials": [audio_url(t) for t in self.config.headphone_tokens]}
        elif stage == "question":
            index = next(i for i, it in enumerate(items) if it.key not in answered)
            pub = items[index].public()
            pub["audio"] = [audio_url(t) for t in pub["audio"]]
            out["item"] = {"index": index, **pub}
        elif stage == "done":
            out["completion_code"] = self.config.completion_code
            if self.config.completion_url:
                out["completion_url"] = self.config.completion_url.replace(
                    "{code}", self.config.completion_code)
        elif stage == "screened_out":
            out["completion_code"] = self.config.screenout_code
        return out

    # ---------------------------------------------------------------- submissions
    def consent(self, row: ParticipantRow) -> None:
        self.store.set_consented(row.participant)

    def headphone(self, row: ParticipantRow, answers) -> bool:
        if self.stage(row) != "headphone":
            raise Refused("the headphone check is not the current step", 409)
        key = self.config.headphone_answers
        if (not isinstance(answers, list) or len(answers) != len(key)
                or not all(isinstance(a, int) and 0 <= a < 3 for a in answers)):
            raise Refused(f"headphone answers must be {len(key)} numbers 0-2")
        passed = sum(a == k for a, k in zip(answers, key)) >= HEADPHONE_PASS
        if not self.store.set_headphone(row.participant, answers, passed):
            raise Refused("the headphone check was answered already", 409)
        return passed

    def answer(self, row: ParticipantRow, index, position, played, rt_ms=None) -> None:
        answered = self.store.answered_items(row.participant)
        if self.stage(row, answered) != "question":
            raise Refused("there is no question to answer now", 409)
        items = self.items(row)
        if not isinstance(index, int) or not 0 <= index < len(items):
            raise Refused("no such item in this participant's test", 404)
        item = items[index]
        if item.key in answered:
            raise Refused("this item was answered already", 409)
        current = next(i for i, it in enumerate(items) if it.key not in answered)
        if index != current:
            raise Refused("items are answered in order; this is not the current one", 409)
        if not isinstance(position, int) or not 0 <= position < len(item.choices):
            raise Refused(f"choice must be a number 0-{len(item.choices) - 1}")
        if (not isinstance(played, list) or len(played) != len(item.audio)
                or not all(p is True for p in played)):
            raise Refused("every sample must be played to the end before answering")
        rt = int(rt_ms) if isinstance(rt_ms, (int, float)) and 0 <= rt_ms < 1e9 else None
        if item.kind == "catch":
            choice, correct = position, position == item.answer
        else:
            choice = item.canonical(position)
            correct = choice == item.answer
        stored = self.store.add_response(ResponseRow(
            row.participant, item.key, item.kind, item.task, item.system, item.question_id,
            position, choice, correct, item.order, rt, time.time()))
        if not stored:
            raise Refused("this item was answered already", 409)
        if len(answered) + 1 >= len(items):
            self.store.set_completed(row.participant)


def audio_url(token: str) -> str:
    return f"/audio/{token}"
