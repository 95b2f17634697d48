"""One participant's way through a test: stages, the next item, and checked submissions.

Stages, in order: ``consent`` -> ``headphone`` -> ``question`` (one per item of the plan) ->
``done``; a failed headphone check ends at ``screened_out``. Every submission is checked against
the participant's own plan and stage: an item that is not theirs, not the current one, answered
already, or answered before every sample was played through is refused with a reason, and
nothing is stored.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from adept_eval.corpora.questions import LETTERS
from adept_eval.errors import Refused
from adept_eval.listening_test.design import (
    HEADPHONE_PASS,
    Item,
    TestConfig,
    headphone_order,
    item_from,
    plan_for,
)
from adept_eval.listening_test.store import ParticipantRow, ResponseRow, Store

PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: participants kept in memory at most (the rest are read from the store when they return)
LIVE_CACHE = 2000
DEFAULT_MAX_PARTICIPANTS = 1000
#: seconds without a request after which an unfinished participant no longer holds a place of
#: the test (``max_participants``); they may still come back and finish
DEFAULT_RELEASE_AFTER = 600.0
#: the share of an item's audio duration that must pass between the server showing the item
#: and taking its answer (the page plays the samples one at a time, each to its end)
DEFAULT_MIN_LISTENING = 1.0


def resume_code(token: str) -> str:
    """Derive the code a participant types to continue on another device.

    The code is an HMAC of the session's secret token, so only the first browser, which holds
    the token, and the server can know it.

    Args:
        token: The session's secret token.

    Returns:
        16 base32 characters in groups of four, joined by '-'.
    """
    digest = hmac.new(token.encode(), b"adept-eval resume code", hashlib.sha256).digest()
    code = base64.b32encode(digest[:10]).decode()
    return "-".join(code[i:i + 4] for i in range(0, 16, 4))


def _same_code(given, expected: str) -> bool:
    """Whether a typed resume code is ``expected``, ignoring case, dashes and spaces
    (compared in constant time)."""
    cleaned = re.sub(r"[^A-Z2-7]", "", str(given or "").upper())
    return hmac.compare_digest(cleaned.encode(), expected.replace("-", "").encode())


def clean_participant_id(value) -> str:
    """Check a participant id as given by the platform (Prolific, MTurk...).

    Args:
        value: The id sent by the page (any JSON value).

    Returns:
        The id, stripped: letters, digits, '-' and '_' only, at most 64 characters.

    Raises:
        Refused: The id has other characters, or none, or more than 64.
    """
    participant = str(value or "").strip()
    if not PARTICIPANT_ID.match(participant):
        raise Refused("participant id must be 1-64 letters, digits, '-' or '_'")
    return participant


@dataclass
class Live:
    """One participant as the server knows them: their stored row, their plan's items and the
    items answered so far, kept in memory (loaded from the store once) and updated only after
    the store committed a change."""

    row: ParticipantRow
    items: tuple[Item, ...]
    answered: set[str]
    fetched: set[str] = field(default_factory=set)  # audio tokens the server sent in full
    #: item key (or "headphone") -> when the server first showed it (``Sessions.clock``)
    shown: dict = field(default_factory=dict)
    #: audio token -> the distinct byte ranges of it sent so far, as sorted, disjoint,
    #: non-adjacent ``[start, end)`` pairs (``add_range``), until it counts as fetched
    partial: dict = field(default_factory=dict)

    @functools.cached_property
    def audio_key(self) -> str:
        """What this session's audio URLs carry (``?s=``): derived from its secret token, so
        only the session's own page can make a fetch count as this session's. Computed once (a
        session's token never changes): every state with audio and every audio fetch needs it."""
        return hashlib.sha256(b"audio|" + self.row.token.encode()).hexdigest()[:20]

    @functools.cached_property
    def audio_tokens(self) -> frozenset:
        """The audio of this session's own items: the only files whose fetches are counted
        (what a client fetches of any other file can never unlock an answer, so keeping its
        byte ranges would only let a client fill the server's memory)."""
        return frozenset(t for item in self.items for t in item.audio)

    @property
    def participant(self) -> str:
        """The participant id."""
        return self.row.participant

    def current(self) -> int:
        """Index of the first item not answered yet (items are answered in order)."""
        return next(i for i, item in enumerate(self.items) if item.key not in self.answered)


class Sessions:
    """The test's participants, served from memory and written through to the store.

    The server is the store's only writer, so what it committed is what the store holds: each
    participant is read from SQLite once (on their first request since the server started) and
    then kept, and a request costs no database read and no JSON decoding of the plan. A
    submission is checked against that state and committed in one go, with no wait in between
    (the web app calls these from its event loop, where nothing else runs meanwhile), and the
    state changes only once the commit succeeded, so what a participant sees is always what a
    crash would keep. One server process per test: a second process would not see the first's
    participants change.
    """

    def __init__(self, config: TestConfig, store: Store, *,
                 max_participants: int = DEFAULT_MAX_PARTICIPANTS,
                 release_after: float = DEFAULT_RELEASE_AFTER,
                 durations: dict[str, float] | None = None,
                 min_listening: float = DEFAULT_MIN_LISTENING, clock=time.monotonic):
        """Serve ``config``'s participants from ``store``.

        Args:
            config: The test's design.
            store: Its responses database.
            max_participants: The most participants holding a place at once: every finished
                participant (completed or screened out) and every unfinished one seen within
                ``release_after`` seconds.
            release_after: Seconds of silence after which an unfinished participant's place
                is released (a flood of sessions that go nowhere does not fill the test).
            durations: Each audio token's duration in seconds (None: no listening time is
                required).
            min_listening: The share of an item's (or the headphone check's) audio duration
                that must pass between the server showing it and taking its answer.
            clock: The time source, in seconds.
        """
        self.config = config
        self.store = store
        self.max_participants = max_participants
        self.release_after = release_after
        self.durations = durations or {}
        self.min_listening = min_listening
        self.clock = clock
        self._headphone = frozenset(config.headphone_tokens)
        self._live: OrderedDict[str, Live] = OrderedDict()  # least recently used first
        self._finished = 0
        #: unfinished participant -> when last seen (after a restart: their last stored step)
        self._active: dict[str, float] = {}
        answered, now, wall = store.last_answers(), clock(), time.time()
        for row in store.participants():
            if row.completed is not None or row.headphone_passed is False:
                self._finished += 1
            else:
                last = max(row.started, row.consented or 0.0, answered.get(row.participant, 0.0))
                self._active[row.participant] = now - max(0.0, wall - last)

    def holding(self) -> int:
        """Count the participants holding a place: finished ones, and unfinished ones seen
        within ``release_after`` seconds (the others are released now).

        Returns:
            The count.
        """
        now = self.clock()
        for participant in [p for p, seen in self._active.items()
                            if now - seen > self.release_after]:
            del self._active[participant]
        return self._finished + len(self._active)

    def _seen(self, live: Live) -> None:
        """Note a request of ``live``'s: an unfinished participant holds a place (again)."""
        if live.row.completed is None and live.row.headphone_passed is not False:
            self._active[live.participant] = self.clock()

    def _finish(self, live: Live) -> None:
        """``live`` finished (completed or screened out): their place is held for good."""
        if self._active.pop(live.participant, None) is not None:
            self._finished += 1

    def _remember(self, live: Live) -> Live:
        """Keep ``live`` in memory, forgetting the least recently used beyond ``LIVE_CACHE``
        (safe: every change is in the store before it is in memory)."""
        self._live[live.participant] = live
        self._live.move_to_end(live.participant)
        while len(self._live) > LIVE_CACHE:
            self._live.popitem(last=False)
        return live

    def _load(self, participant: str) -> Live | None:
        """The participant's session from memory, else from the store (then kept); None for
        an unknown id."""
        live = self._live.get(participant)
        if live is not None:  # every request and audio fetch: only mark it recently used
            self._live.move_to_end(participant)
            return live
        row = self.store.participant(participant)
        if row is None:
            return None
        return self._remember(Live(row, tuple(item_from(d) for d in row.plan["items"]),
                                   self.store.answered_items(participant),
                                   self.store.fetched(participant)))

    def resumed(self, participant, token=None, resume=None) -> Live | None:
        """Find the session a request to start one only continues (so never creates a
        participant). Never raises.

        Args:
            participant: The participant id sent.
            token: The session token sent, if any.
            resume: The resume code sent, if any.

        Returns:
            The session of a known participant id when ``token`` is its secret token or
            ``resume`` its resume code, else None (an unknown or malformed id, a wrong or
            made-up token or code).
        """
        participant_id = str(participant or "").strip()
        if not PARTICIPANT_ID.match(participant_id) or not (token or resume):
            return None
        live = self._load(participant_id)
        if live is None:
            return None
        if (token and hmac.compare_digest(live.row.token.encode(), str(token).encode())) or \
                (resume and _same_code(resume, resume_code(live.row.token))):
            self._seen(live)
            return live
        return None

    def start(self, participant, token=None, resume=None) -> tuple[Live, bool]:
        """Start a participant's session, or continue theirs.

        A new id gets a session (plan drawn, arrival numbered) and its secret token; a known id
        gets its session back only with that token (the browser that started it) or the
        resume code derived from it (another device): an id alone never yields a session,
        since ids such as Prolific's are not secrets. A token or code given with an unknown id
        is ignored: a new session is created, as without them (so a caller that limits new
        sessions must not exempt a request for carrying a token; ``resumed`` tells which
        requests only continue one).

        Args:
            participant: The participant id sent.
            token: The session token sent, if any.
            resume: The resume code sent, if any.

        Returns:
            (the participant's session, whether it was created now).

        Raises:
            Refused: A malformed id (400), a known id without its token or code (409), or a
                full test (503).
        """
        participant_id = clean_participant_id(participant)
        live = self.resumed(participant_id, token, resume)
        if live is not None:
            return live, False
        if self._load(participant_id) is not None:
            raise Refused("this participant id has already started the test in another "
                          "browser; to continue here, enter the resume code shown there", 409)
        if self.holding() >= self.max_participants:
            raise Refused("the test is full: it takes no more participants", 503)
        row = self.store.create_participant(
            participant_id, lambda arrival: plan_for(self.config, participant_id, arrival))
        live = self._remember(Live(row, tuple(item_from(d) for d in row.plan["items"]), set()))
        self._seen(live)
        return live, True

    def authenticate(self, participant: str, token: str) -> Live:
        """Find the session a request's participant id and session token name.

        Args:
            participant: The ``X-Participant`` header.
            token: The ``X-Session-Token`` header.

        Returns:
            The participant's session.

        Raises:
            Refused: An unknown participant or a wrong token (403).
        """
        live = self._load(str(participant or "")) if PARTICIPANT_ID.match(
            str(participant or "")) else None
        if live is None or not hmac.compare_digest(live.row.token.encode(),
                                                   str(token or "").encode()):
            raise Refused("unknown participant or session token", 403)
        self._seen(live)
        return live

    # ---------------------------------------------------------------- state
    def stage(self, live: Live) -> str:
        """Tell which stage a participant is at.

        Args:
            live: The participant's session.

        Returns:
            ``consent``, ``headphone``, ``question``, ``done`` or ``screened_out``.
        """
        row = live.row
        if row.consented is None:
            return "consent"
        if row.headphone_passed is None:
            return "headphone"
        if not row.headphone_passed:
            return "screened_out"
        if row.completed is not None:
            return "done"
        return "done" if len(live.answered) >= len(live.items) else "question"

    def state(self, live: Live) -> dict:
        """Describe the participant's current page for the browser.

        Args:
            live: The participant's session.

        Returns:
            The stage, title and progress, and what the stage shows: the headphone check's
            audio, the current item (without its answer), or the completion code.
        """
        stage = self.stage(live)
        out = {"stage": stage, "title": self.config.title,
               "progress": {"done": len(live.answered), "total": len(live.items)}}
        if stage == "headphone":
            live.shown.setdefault("headphone", self.clock())
            out["headphone"] = {"calibration": audio_url(self.config.calibration_token, live),
                                "trials": [audio_url(t, live) for t in self._trials(live)[0]]}
        elif stage == "question":
            index = live.current()
            live.shown.setdefault(live.items[index].key, self.clock())
            pub = live.items[index].public()
            pub["audio"] = [audio_url(t, live) for t in pub["audio"]]
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
    def _reload(self, live: Live) -> None:
        """Refresh a participant from the store (after a write found it ahead of memory)."""
        row = self.store.participant(live.participant)
        if row is not None:
            live.row = row
            live.answered = self.store.answered_items(live.participant)

    def consent(self, live: Live) -> None:
        """Record the participant's consent (once).

        Args:
            live: The participant's session.
        """
        if live.row.consented is None:
            live.row = replace(live.row, consented=self.store.set_consented(live.participant))

    def headphone(self, live: Live, answers) -> bool:
        """Score and record the participant's headphone check.

        Args:
            live: The participant's session.
            answers: The page's answers: one number 0-2 per trial.

        Returns:
            Whether the participant passed.

        Raises:
            Refused: The check is not the current stage or was answered already (409), or
                the answers are malformed (400).
        """
        if self.stage(live) != "headphone":
            raise Refused("the headphone check is not the current step", 409)
        trials, key = self._trials(live)
        if (not isinstance(answers, list) or len(answers) != len(key)
                or not all(_number(a) and 0 <= a < 3 for a in answers)):
            raise Refused(f"headphone answers must be {len(key)} numbers 0-2")
        unheard = [str(i + 1) for i, token in enumerate(trials) if token not in live.fetched]
        if unheard:
            raise Refused("play every trial's tones before answering (trial "
                          f"{', '.join(unheard)} was never fetched)")
        self._listened(live, "headphone", trials)
        passed = sum(given == right for given, right in zip(answers, key)) >= HEADPHONE_PASS
        if not self.store.set_headphone(live.participant, answers, passed):
            self._reload(live)
            raise Refused("the headphone check was answered already", 409)
        live.row = replace(live.row, headphone=list(answers), headphone_passed=passed)
        if not passed:
            self._finish(live)
        return passed

    def _trials(self, live: Live) -> tuple[list[str], list[int]]:
        """The headphone check as ``live`` gets it: the trials' tokens in their own order, and
        the key (the quiet tone of each)."""
        order = headphone_order(self.config, live.participant)
        return ([self.config.headphone_tokens[i] for i in order],
                [self.config.headphone_answers[i] for i in order])

    def _listened(self, live: Live, key: str, audio) -> int:
        """Check that the audio of what ``key`` names has had time to be heard since the
        server showed it, and measure how long that was.

        Args:
            live: The participant's session.
            key: The item's key, or "headphone".
            audio: Its audio tokens.

        Returns:
            The milliseconds since the server first showed it.

        Raises:
            Refused: Less than ``min_listening`` times the audio's duration has passed (409).
        """
        now = self.clock()
        shown = live.shown.setdefault(key, now)
        needed = self.min_listening * sum(self.durations.get(token, 0.0) for token in audio)
        if now - shown < needed:
            raise Refused(f"answered {now - shown:.1f} s after the samples were given; playing "
                          f"them to the end takes {needed:.1f} s", 409)
        return int((now - shown) * 1000)

    def answer(self, live: Live, index, position, played, rt_ms=None) -> None:
        """Check and store the participant's answer to their current item.

        Args:
            live: The participant's session.
            index: The item's index in their plan, as sent.
            position: The presented position of the choice made, as sent.
            played: One ``true`` per sample, as sent: the page played each to its end.
            rt_ms: The response time the page measured; not used: the server measures it
                (from showing the item to taking its answer) and stores that.

        Raises:
            Refused: No question is current or it was answered already (409), the item is
                not theirs (404) or not the current one (409), the choice is malformed, a
                sample was not played or never fetched (400), or the answer came sooner than
                the samples can be played (409).
        """
        item = self._current_item(live, index)
        if not _number(position) or not 0 <= position < len(item.choices):
            raise Refused(f"choice must be a number 0-{len(item.choices) - 1}")
        _check_heard(live, item, played)
        rt = self._listened(live, item.key, item.audio)
        if item.kind == "catch":
            choice, correct = position, position == item.answer
        else:
            choice = item.canonical(position)
            correct = choice == item.answer
        last = len(live.answered) + 1 >= len(live.items)
        response = ResponseRow(live.participant, item.key, item.kind, item.task, item.system,
                               item.question_id, position, choice, correct, item.order, rt,
                               time.time())
        if not self.store.add_response(response, completes=last):
            self._reload(live)
            raise Refused("this item was answered already", 409)
        live.answered.add(item.key)
        live.shown.pop(item.key, None)
        if last:
            live.row = replace(live.row, completed=response.answered)
            self._finish(live)

    def _current_item(self, live: Live, index) -> Item:
        """The item at ``index`` when it is the participant's current, unanswered item.

        Args:
            live: The participant's session.
            index: The item's index, as sent.

        Returns:
            The item.

        Raises:
            Refused: No question is current (409), no such item (404), or the item is
                answered already or not the current one (409).
        """
        if self.stage(live) != "question":
            raise Refused("there is no question to answer now", 409)
        if not _number(index) or not 0 <= index < len(live.items):
            raise Refused("no such item in this participant's test", 404)
        item = live.items[index]
        if item.key in live.answered:
            raise Refused("this item was answered already", 409)
        if index != live.current():
            raise Refused("items are answered in order; this is not the current one", 409)
        return item

    # ---------------------------------------------------------------- audio
    def served(self, participant: str, key: str, audio: str, nbytes: int, size: int,
               start: int = 0) -> None:
        """Count ``nbytes`` bytes of audio file ``audio`` (``size`` bytes) from offset ``start``
        as sent to the session whose URL carried ``participant`` and ``key``; once the distinct
        bytes sent cover at least ``FETCHED_SHARE`` of the file, it counts as fetched
        (recorded in the store, so a restart keeps it). What is counted is the union of the
        ranges sent, not their sum: the same first bytes asked for again and again cover no
        more of the file. Anything that does not match a session, or a file that is not one of
        its items' (``Live.audio_tokens``), is ignored: the audio itself is not secret. So
        memory is bounded per session: its own items' files, ``MAX_RANGES`` ranges each.

        Args:
            participant: The participant id the URL carried (``p=``).
            key: The audio key the URL carried (``s=``).
            audio: The audio token.
            nbytes: Bytes sent.
            size: The file's size in bytes.
            start: The offset of the first byte sent.
        """
        if not PARTICIPANT_ID.match(participant or "") or not key:
            return
        live = self._load(participant)
        if live is None or not hmac.compare_digest(live.audio_key.encode(), key.encode()):
            return
        self._seen(live)
        if audio in live.fetched or (audio not in live.audio_tokens
                                     and audio not in self._headphone):
            return
        ranges = add_range(live.partial.get(audio, []), max(0, start), min(start + nbytes, size))
        if sum(high - low for low, high in ranges) >= FETCHED_SHARE * size:
            self.store.add_fetched(participant, audio)
            live.fetched.add(audio)
            live.partial.pop(audio, None)
        else:
            live.partial[audio] = ranges


#: the share of a file's bytes that must have been sent for it to count as fetched
FETCHED_SHARE = 0.9
#: the most separate byte ranges of one file kept per session (a browser sends one or a few)
MAX_RANGES = 32


def add_range(ranges: list, start: int, end: int, keep: int = MAX_RANGES) -> list:
    """Add a byte range to a set of ranges, merging overlapping and adjacent ones.

    At most ``keep`` ranges are kept: beyond that the shortest are forgotten, so memory stays
    bounded whatever a client asks for (a client scattering tiny ranges loses them; what is
    counted is never more than was sent).

    Args:
        ranges: Sorted, disjoint, non-adjacent ``[start, end)`` pairs.
        start: The first byte of the range added.
        end: One past its last byte.
        keep: The most ranges kept.

    Returns:
        The new list of ranges (``ranges`` itself when the range added is empty).
    """
    if end <= start:
        return ranges
    merged = []
    for low, high in ranges:
        if high < start or low > end:  # apart (touching ranges merge)
            merged.append((low, high))
        else:
            start, end = min(start, low), max(end, high)
    merged.append((start, end))
    merged.sort()
    if len(merged) > keep:
        longest = sorted(merged, key=lambda pair: pair[1] - pair[0], reverse=True)[:keep]
        merged = sorted(longest)
    return merged


def audio_url(token: str, live: Live | None = None) -> str:
    """Make the URL of an audio file as this session's page gets it.

    The session's participant and audio key make each session's URLs its own (a browser's
    cache never serves one session's fetch to another) and let the server count what it sent.

    Args:
        token: The audio token.
        live: The session, or None for the bare URL.

    Returns:
        ``/audio/<token>``, with ``?p=<participant>&s=<audio key>`` for a session.
    """
    if live is None:
        return f"/audio/{token}"
    return f"/audio/{token}?p={live.participant}&s={live.audio_key}"


def _number(value) -> bool:
    """A JSON integer: ``true``/``false`` are not numbers (Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_heard(live: Live, item: Item, played) -> None:
    """Refuse an answer before every sample of ``item`` was played and sent in full.

    Args:
        live: The participant's session.
        item: The item answered.
        played: One ``true`` per sample, as the page sent it.

    Raises:
        Refused: The page did not report every sample played, or the server never sent one.
    """
    if (not isinstance(played, list) or len(played) != len(item.audio)
            or not all(flag is True for flag in played)):
        raise Refused("every sample must be played to the end before answering")
    unheard = [LETTERS[i] for i, token in enumerate(item.audio) if token not in live.fetched]
    if unheard:  # the page says it played them; the server never sent them
        raise Refused("every sample must be played to the end before answering (sample "
                      f"{', '.join(unheard)} was never fetched)")
