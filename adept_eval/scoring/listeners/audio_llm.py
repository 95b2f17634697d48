"""The audio-LLM listener: an audio-capable LLM hears the stimuli and answers the question.

It uses the shared LLM client (``adept_eval.llm``): ``llm_backend=openai`` with ``llm_base_url``
for a local vLLM/SGLang server, or ``gemini``; a key only from ``llm_api_key_env`` for a custom
server. Each question is asked under ``orders`` deterministic presentation orders (cyclic
rotations of the samples, or of the text choices for single-stimulus questions) to control
position bias; the answers are mapped back to the original choices and the majority wins (ties:
the order the question itself uses). The share of orders that agree with that answer is
reported as ``order_agreement``. A reply without a valid letter is asked again up to
``llm_max_reasks`` times; a question with no valid answer under any order is a failure, counted
as wrong, and its detail keeps the reason (e.g. "request failed: AuthenticationError (HTTP
401)"). Replies are cached by content like the judge's verdicts.

The listener checks the server once when it is created (one ``GET /models``): with nothing
listening at ``llm_base_url``, or a refused key, it stops with a message naming the URL instead
of failing every question. ``answer_many`` asks many questions at once (``llm_concurrency``
requests in flight, ``llm_rpm``, retries) with a progress bar.

    lm_eval --model adept-natural --tasks adept \\
        --metadata listener=audio-llm,llm_base_url=http://localhost:8000/v1,llm_model=Qwen/Qwen2.5-Omni-7B

On ``adept-natural`` its accuracy is its ceiling: ``adept-eval ceiling --listener audio-llm ...``.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field

from adept_eval.corpora.corpus import Corpus, load_corpus
from adept_eval.llm import (
    AudioPolicy,
    Connection,
    LLMClient,
    Part,
    cache_key,
    check_server,
    default_cache,
    inspect,
    payload,
    run_sync,
)
from adept_eval.errors import BadInput, LLMUnavailable
from adept_eval.options import number, yes_no
from adept_eval.corpora.questions import LETTERS, Question
from adept_eval.scoring.listeners import Answer, Listener, Response, register_listener

_ANSWER = re.compile(r"answer\s*(?:is)?\s*[:\-]?[\s*_`\"'(\[]*([A-E])\b", re.IGNORECASE)
_BARE = re.compile(r"^\s*[*_`\"'(\[]*([A-E])[)\].:]?[*_`\"']*\s*$")


def parse_letter(reply: str | None, n_choices: int) -> int | None:
    """Read the letter a model's reply chooses.

    Args:
        reply: The model's reply (None: no reply).
        n_choices: How many choices the question offers.

    Returns:
        The chosen letter's index: of the last "Answer: X", or of a reply that is just a
        letter; None when there is none or it is beyond the choices.
    """
    if not reply:
        return None
    found = _ANSWER.findall(reply)
    letter = found[-1] if found else None
    if letter is None:
        bare = _BARE.match(reply)
        letter = bare.group(1) if bare else None
    if letter is None:
        return None
    idx = LETTERS.index(letter.upper())
    return idx if idx < n_choices else None


__all__ = ["AudioLLMListener", "LLMUnavailable", "parse_letter"]  # LLMUnavailable: adept_eval.llm's


def _vote(votes: list[int], problems: list[str], orders: int, n_choices: int) -> Answer:
    """The answer the orders' ``votes`` give: the most voted choice (a tie goes to the first
    order's vote when it is tied, else to the lowest choice), each choice's share of the
    ``orders`` as scores and the agreement, and the orders' ``problems`` in the detail."""
    counts = Counter(votes)
    top = max(counts.values())
    tied = [c for c, k in counts.items() if k == top]
    choice = votes[0] if votes[0] in tied else min(tied)
    agreement = counts[choice] / orders
    scores = tuple(counts.get(i, 0) / orders for i in range(n_choices))
    detail = f"votes {dict(counts)} over {orders} orders"
    if problems:
        detail += "; " + "; ".join(problems)
    return Answer((Response(choice),), "ok", scores, detail=detail, agreement=agreement)


@register_listener("audio-llm")
@dataclass
class AudioLLMListener(Listener):
    """A listener that asks an audio language model each question, under ``orders``
    presentation orders of its choices, and takes the vote (so that a model's preference for a
    letter or a position does not decide the answer).

    The ``llm_*`` options name the backend, model, server and its limits; the key comes only
    from the environment variable ``llm_api_key_env`` names. Replies are cached
    (``llm_cache``), and the server is checked before the run (``llm_preflight``).

    Raises:
        OptionError: An option is out of range.
        Exception: The key or model is missing, or the preflight finds the server unusable
            (the connection's and preflight's own errors).
    """

    llm_backend: str = "openai"
    llm_model: str = ""
    llm_base_url: str | None = None
    llm_api_key_env: str | None = None
    orders: int = 3
    llm_temperature: float = 0.0
    llm_max_tokens: int = 256
    llm_max_reasks: int = 2
    llm_timeout: float = 120.0
    llm_max_retries: int = 5
    llm_concurrency: int = 4
    llm_rpm: float | None = None
    llm_cache: str | None = None  # sqlite path; "" disables; default under $ADEPT_EVAL_HOME
    llm_preflight: bool = True
    progress: bool = True
    corpus: Corpus | None = None
    _client: LLMClient | None = field(init=False, default=None, repr=False)

    def __post_init__(self):
        """Load the corpus, check the options and open the connection (see the class's
        ``Raises``)."""
        self.corpus = self.corpus or load_corpus()

        def option(value, name, **rule):
            return number(value, name, "--metadata", **rule)

        self.orders = option(self.orders, "orders", whole=True, least=1)
        self.connection = Connection(
            self.llm_backend, self.llm_model, self.llm_base_url, self.llm_api_key_env,
            option(self.llm_timeout, "llm_timeout", positive=True),
            option(self.llm_max_retries, "llm_max_retries", whole=True, least=0),
            option(self.llm_concurrency, "llm_concurrency", whole=True, least=1),
            option(self.llm_rpm, "llm_rpm", least=0, optional=True) or None)
        self.policy = AudioPolicy(max_seconds=60.0)
        # a missing key or model fails here; an unreachable server fails the preflight
        self.connection.open()
        if yes_no(self.llm_preflight, "llm_preflight", "--metadata"):
            check_server(self.connection, who="audio-llm listener", url_option="llm_base_url",
                         key_option="llm_api_key_env")
        self._client = LLMClient(self.connection,
                                 default_cache("listener_cache.sqlite", self.llm_cache))

    def identity(self) -> dict:
        """Describe the scorer for the run's identity.

        Returns:
            The listener's name, backend, model, number of orders and temperature.
        """
        return {"listener": self.name, "backend": self.llm_backend, "model": self.llm_model,
                "orders": self.orders, "temperature": self.llm_temperature}

    # ------------------------------------------------------------------------- prompts
    def _parts(self, q: Question, perm: list[int], audio: dict) -> list[Part]:
        """The question as heard under one presentation order (``perm``: shown -> original)."""
        ask = ("Reply with the letter of your choice, in the form 'Answer: X'.")
        if q.design == "multi":
            parts = [Part("text", text=(
                f"This is a listening test. You will hear {len(perm)} recordings of the same "
                f"sentence, \u201c{q.text}\u201d, spoken by the same speaker in different ways."))]
            for shown, orig in enumerate(perm):
                parts += [Part("text", text=f"Sample {LETTERS[shown]}:"),
                          Part("audio", audio=audio[q.stimuli[orig]])]
            letters = ", ".join(LETTERS[: len(perm)])
            parts.append(Part("text", text=f"Question: {q.question}\nChoices: {letters}.\n{ask}"))
            return parts
        choices = "\n".join(f"{LETTERS[shown]}. {q.choices[orig]}" for shown, orig in enumerate(perm))
        return [Part("text", text=(f"This is a listening test. You will hear one recording of "
                                   f"the sentence \u201c{q.text}\u201d.")),
                Part("audio", audio=audio[q.stimuli[0]]),
                Part("text", text=f"Question: {q.question}\n{choices}\n{ask}")]

    # ------------------------------------------------------------------------- answering
    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """Answer one question (``answer_many`` of one, without a progress bar).

        Args:
            question: The question.
            samples: Stimulus id -> the system's sample path.

        Returns:
            The vote's answer, or a failed answer.
        """
        return self.answer_many([(question, samples)], progress=False)[0]

    def answer_many(self, asked: list[tuple[Question, dict[str, str]]],
                    progress: bool | None = None) -> list[Answer]:
        """Answer many questions concurrently (the shared client's concurrency, rate limit,
        retries and cache), with a progress bar.

        Args:
            asked: (question, stimulus id -> sample path) per question.
            progress: Whether to show the progress bar; None for the ``progress`` option.

        Returns:
            One answer per question, in order.
        """
        show = self.progress if progress is None else progress

        async def run():
            try:
                return await self._client.map(
                    lambda i, qs: self._answer(*qs), asked, desc=f"{self.name}: listening",
                    unit="question", progress=show and len(asked) > 1,
                    postfix=lambda a: "ok" if a.status == "ok" else "failed",
                    concurrency=-(-self.connection.concurrency // self.orders))
            finally:
                await self._client.aclose()

        return run_sync(run())

    async def _answer(self, question: Question, samples: dict[str, str]) -> Answer:
        """Ask the model one question under several orders of its choices and take the vote.

        Returns:
            The choice most orders gave (a tie: the first order's, if tied, else the lowest),
            with each choice's share of the orders as scores; a failed answer when a sample
            is missing or refused, or no order gave a valid answer.
        """
        try:
            audio = await self._audio(question, samples)
        except (BadInput, KeyError) as exc:
            detail = f"{exc}" if isinstance(exc, BadInput) else f"no sample for {exc}"
            return Answer((Response(None, detail=detail),), "failed", detail=detail)
        n = question.n_choices
        perms = [[(i + shift) % n for i in range(n)] for shift in range(min(self.orders, n))]
        replies = await asyncio.gather(*(self._ask(question, p, audio) for p in perms))
        votes, problems = [], []
        for perm, reply in zip(perms, replies):
            if reply.value is None:
                problems.append(f"order {perm}: {reply.problem}")
            else:
                votes.append(perm[int(reply.value)])
        if not votes:
            detail = "no valid answer under any order: " + "; ".join(problems)
            return Answer((Response(None, detail=detail),), "failed", detail=detail)
        return _vote(votes, problems, len(perms), n)

    async def _audio(self, question: Question, samples: dict[str, str]) -> dict:
        """Each stimulus's sample, checked and made ready to send, by stimulus id.

        Raises:
            BadInput: A sample fails its checks.
            KeyError: A stimulus has no sample.
        """
        checks = self._client.checks
        sources = {s: await asyncio.to_thread(inspect, samples[s], checks, self.policy, s)
                   for s in question.stimuli}
        return {s: await asyncio.to_thread(payload, src, self.policy)
                for s, src in sources.items()}

    async def _ask(self, q: Question, perm: list[int], audio: dict):
        parts = self._parts(q, perm, audio)
        # the server that answers (its URL, never a key) is part of the key, as in the judge's
        key = cache_key(kind="adept-listener", backend=self.llm_backend,
                        server=self._client.backend().endpoint, model=self.llm_model,
                        temperature=self.llm_temperature, max_tokens=self.llm_max_tokens,
                        parts=[p.text if p.kind == "text" else p.audio.sha256 for p in parts])

        def parse(reply: str):
            shown = parse_letter(reply, len(perm))
            return shown, "" if shown is not None else f"no valid letter in {reply[:80]!r}"

        return await self._client.ask(parts, parse, key=key, identity=self.identity(),
                                      reasks=self.llm_max_reasks,
                                      temperature=self.llm_temperature,
                                      max_tokens=self.llm_max_tokens)
