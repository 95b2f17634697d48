"""The audio-LLM listener: an audio-capable LLM hears the stimuli and answers the question.

It uses the speech judge's backends (``llm_backend=openai`` with ``llm_base_url`` for a local
vLLM/SGLang server, or ``gemini``; keys from the environment). Each question is asked under
``orders`` deterministic presentation orders (cyclic rotations of the samples, or of the text
choices for single-stimulus questions) to control position bias; the answers are mapped back to
the original choices and the majority wins (ties: the order the question itself uses). The share
of orders that agree with that answer is reported as ``order_agreement``. A reply without a valid
letter is asked again up to ``llm_max_reasks`` times; a question with no valid answer under any
order is a failure, counted as wrong. Replies are cached by content like the judge's verdicts.

    lm_eval --model adept-natural --tasks adept \\
        --metadata listener=audio-llm llm_base_url=http://localhost:8000/v1 llm_model=Qwen/Qwen2.5-Omni-7B

On ``adept-natural`` its accuracy is its ceiling: ``adept-eval ceiling --listener audio-llm ...``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from ..corpus import Corpus, load_corpus
from ..judge.backends import BackendError, Part, get_backend
from ..judge.cache import JudgementCache, cache_key
from ..judge.runner import BadInput, JudgeConfig, prepare_audio, run_sync
from ..questions import LETTERS, Question
from . import Answer, Listener, Response, register_listener

_ANSWER = re.compile(r"answer\s*(?:is)?\s*[:\-]?[\s*_`\"'(\[]*([A-E])\b", re.IGNORECASE)
_BARE = re.compile(r"^\s*[*_`\"'(\[]*([A-E])[)\].:]?[*_`\"']*\s*$")


def parse_letter(reply: str | None, n_choices: int) -> int | None:
    """The chosen letter's index: the last "Answer: X", or a reply that is just a letter."""
    if not reply:
        return None
    found = _ANSWER.findall(reply)
    letter = found[-1] if found else None
    if letter is None:
        m = _BARE.match(reply)
        letter = m.group(1) if m else None
    if letter is None:
        return None
    idx = LETTERS.index(letter.upper())
    return idx if idx < n_choices else None


@register_listener("audio-llm")
@dataclass
class AudioLLMListener(Listener):
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
    llm_cache: str | None = None  # sqlite path; "" disables; default under $ADEPT_EVAL_HOME
    corpus: Corpus | None = None
    _cache: JudgementCache | None = field(init=False, default=None)

    def __post_init__(self):
        self.corpus = self.corpus or load_corpus()
        self.orders = max(1, int(self.orders))
        # fail at start-up on a missing key or model, not on the first question
        get_backend(self.llm_backend, model=self.llm_model, base_url=self.llm_base_url,
                    api_key_env=self.llm_api_key_env)
        if self.llm_cache != "":
            from ..corpus import cache_home

            self._cache = JudgementCache(self.llm_cache or cache_home() / "listener_cache.sqlite")

    def identity(self) -> dict:
        return {"listener": self.name, "backend": self.llm_backend, "model": self.llm_model,
                "orders": self.orders, "temperature": self.llm_temperature}

    # ------------------------------------------------------------------------- prompts
    def _parts(self, q: Question, perm: list[int], audio: dict[str, bytes]) -> list[Part]:
        """The question as heard under one presentation order (``perm``: shown -> original)."""
        ask = ("Reply with the letter of your choice, in the form 'Answer: X'.")
        if q.design == "multi":
            parts = [Part("text", text=(
                f"This is a listening test. You will hear {len(perm)} recordings of the same "
                f"sentence, \u201c{q.text}\u201d, spoken by the same speaker in different ways."))]
            for shown, orig in enumerate(perm):
                parts += [Part("text", text=f"Sample {LETTERS[shown]}:"),
                          Part("audio", wav=audio[q.stimuli[orig]])]
            letters = ", ".join(LETTERS[: len(perm)])
            parts.append(Part("text", text=f"Question: {q.question}\nChoices: {letters}.\n{ask}"))
            return parts
        choices = "\n".join(f"{LETTERS[shown]}. {q.choices[orig]}" for shown, orig in enumerate(perm))
        return [Part("text", text=(f"This is a listening test. You will hear one recording of "
                                   f"the sentence \u201c{q.text}\u201d.")),
                Part("audio", wav=audio[q.stimuli[0]]),
                Part("text", text=f"Question: {q.question}\n{choices}\n{ask}")]

    # ------------------------------------------------------------------------- answering
    def answer(self, question: Question, samples: dict[str, str]) -> Answer:
        try:
            prep = JudgeConfig(max_audio_seconds=60)
            audio = {s: prepare_audio(samples[s], prep, s) for s in question.stimuli}
        except BadInput as exc:
            return Answer((Response(None, detail=str(exc)),), "failed", detail=str(exc))
        n = question.n_choices
        perms = [[(i + shift) % n for i in range(n)] for shift in range(min(self.orders, n))]
        replies = run_sync(self._ask_all(question, perms, audio))
        votes, details = [], []
        for perm, (reply, shown) in zip(perms, replies):
            if shown is None:
                details.append(f"order {perm}: no valid letter in {reply[:80]!r}")
            else:
                votes.append(perm[shown])
        if not votes:
            return Answer((Response(None, detail="; ".join(details)),), "failed",
                          detail="no valid answer under any order")
        counts = Counter(votes)
        top = max(counts.values())
        tied = [c for c, k in counts.items() if k == top]
        choice = votes[0] if votes[0] in tied else min(tied)
        agreement = counts[choice] / len(perms)
        scores = tuple(counts.get(i, 0) / len(perms) for i in range(n))
        return Answer((Response(choice),), "ok", scores,
                      detail=f"votes {dict(counts)} over {len(perms)} orders",
                      agreement=agreement)

    async def _ask_all(self, q: Question, perms, audio):
        backend = get_backend(self.llm_backend, model=self.llm_model,
                              base_url=self.llm_base_url, api_key_env=self.llm_api_key_env,
                              timeout=self.llm_timeout, max_retries=self.llm_max_retries)
        try:
            return await asyncio.gather(*(self._ask(backend, q, p, j, audio)
                                          for j, p in enumerate(perms)))
        finally:
            await backend.aclose()

    async def _ask(self, backend, q: Question, perm, j: int, audio):
        parts = self._parts(q, perm, audio)
        key = cache_key(kind="adept-listener", backend=self.llm_backend, model=self.llm_model,
                        temperature=self.llm_temperature, max_tokens=self.llm_max_tokens,
                        parts=[p.text if p.kind == "text" else hashlib.sha256(p.wav).hexdigest()
                               for p in parts])
        if self._cache is not None and (hit := self._cache.get(key)) is not None:
            return hit[0], hit[1]
        reply = ""
        for _ in range(1 + max(0, int(self.llm_max_reasks))):
            try:
                reply = await backend.complete(parts, temperature=self.llm_temperature,
                                               max_tokens=self.llm_max_tokens)
            except BackendError as exc:
                return f"request failed: {exc}", None
            shown = parse_letter(reply, len(perm))
            if shown is not None:
                if self._cache is not None:
                    self._cache.put(key, reply, shown, self.identity())
                return reply, shown
        return reply, None
