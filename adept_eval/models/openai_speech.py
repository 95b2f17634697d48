"""``openai-speech``: a live spoken-dialogue model behind an OpenAI-compatible chat API with audio
output (OpenAI's audio models, or an omni model served by vLLM / SGLang).

    lm_eval --model openai-speech --model_args model=gpt-4o-audio-preview,voice=alloy \\
        --tasks vstyle_en --metadata judge_backend=gemini

Each stimulus's audio (the spoken VStyle instruction; for ADEPT, the reference recording) is
sent as an ``input_audio`` part, its original MP3/WAV bytes, after the stimulus text when
``send_text`` is on, with ``system_prompt`` as the system message when given. Nothing else is
sent: for ADEPT a model told nothing answers the recording instead of re-speaking its sentence,
so prosody transfer needs an instruction (``system_prompt``; docs/openai-speech.md). The spoken
answer is saved in the format it came in (WAV, or MP3) with its transcript next to it
(``.json``). Answers are cached by content (server, model, voice, system prompt, the text when
sent, the stimulus audio's hash), so a rerun costs nothing and a run killed halfway resumes. The
shared LLM client (``adept_eval.llm``) does the asking: bounded concurrency, a requests-per-minute
limit, retries honouring Retry-After, requests counted as sent, a key only from
``api_key_env`` for a custom ``base_url``. The server is checked when the model is created (one
``GET /models``): one that does not answer, or refuses the key, stops the run there with one
message naming ``base_url`` and the URL. A failed answer (the server up) fails that stimulus only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

from adept_eval.llm import (
    AudioPolicy,
    Connection,
    LLMClient,
    Part,
    check_server,
    count_requests,
    inspect,
    payload,
    run_sync,
)
from adept_eval.errors import BackendError, BadInput
from adept_eval.llm.audio import sniff_format
from adept_eval.llm.backends import public_url
from adept_eval.options import number, yes_no
from adept_eval.errors import SystemSetupError
from adept_eval.models.base import Produced, SpeechSystem, Stimulus


class OpenAISpeechSystem(SpeechSystem):
    """A system whose samples an OpenAI-compatible speech model produces."""
    default_on_missing = "wrong"

    def __init__(self, model: str = "", base_url: str | None = None,
                 api_key_env: str | None = None, voice: str = "alloy", system_prompt: str = "",
                 send_text: bool = False, concurrency: int = 4, rpm: float | None = None,
                 timeout: float = 180.0, max_retries: int = 5, cache_dir: str | None = None,
                 name: str | None = None, **kwargs):
        if not model:
            raise SystemSetupError("openai-speech needs model=NAME in --model_args")
        super().__init__(name=name or model, **kwargs)
        self.model, self.base_url, self.api_key_env = model, base_url, api_key_env
        self.voice, self.system_prompt = voice, system_prompt
        self.send_text = yes_no(send_text, "send_text", "--model_args")
        def option(value, name, **rule):
            return number(value, name, "--model_args", **rule)

        self.connection = Connection(
            "openai", model, base_url, api_key_env, option(timeout, "timeout", positive=True),
            option(max_retries, "max_retries", whole=True, least=0),
            option(concurrency, "concurrency", whole=True, least=1),
            option(rpm, "rpm", least=0, optional=True) or None)  # 0: no limit, as the judge's
        if cache_dir is None:
            from adept_eval.paths import cache_home

            cache_dir = cache_home() / "systems"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)
        self.cache_dir = Path(cache_dir).expanduser() / safe
        self.requests = 0  # HTTP requests actually sent (retries included)
        self.policy = AudioPolicy(max_seconds=600.0)
        try:  # fail now if the key is missing, not after the corpus has been prepared
            self.connection.open()
        except ValueError as exc:
            raise SystemSetupError(f"openai-speech: {exc}") from None
        # and if the server does not answer (one GET /models): one message naming base_url
        check_server(self.connection, who="openai-speech", url_option="base_url",
                     key_option="api_key_env")

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        """The system's name: ``name=``, else the model's.

        Args:
            args: the ``--model_args``.

        Returns:
            The name.
        """
        return str(args.get("name") or args.get("model") or "openai-speech")

    def describe(self) -> dict:
        """The system's identity with its speech model and voice.

        Returns:
            The description.
        """
        return {**super().describe(), "speech_model": self.model, "voice": self.voice}

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        """Each stimulus' sample, spoken by the model (or from its cache).

        Args:
            stimuli: the stimuli.

        Returns:
            One ``Produced`` per stimulus, in order.
        """
        return run_sync(self._produce(stimuli))

    def _cached(self, key: str) -> Path | None:
        for ext in (".wav", ".mp3"):
            target = self.cache_dir / f"{key}{ext}"
            if target.exists() and target.stat().st_size > 0:
                return target
        return None

    async def _produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        client = LLMClient(self.connection, cache_path=None)

        async def one(_, s: Stimulus) -> Produced:
            try:
                src = await asyncio.to_thread(inspect, s.reference_audio, client.checks,
                                              self.policy, "instruction audio")
                # the server is part of the key (its public URL: no credentials), as for the
                # judge's verdicts: another server's answers are never served as this one's
                key = hashlib.sha256(json.dumps(
                    [public_url(self.base_url or ""), self.model, self.voice, self.system_prompt,
                     s.text if self.send_text else "", src.sha256]).encode()).hexdigest()[:32]
                target = self._cached(key)
                if target is None:
                    audio = await asyncio.to_thread(payload, src, self.policy)
                    parts = ([Part("text", text=s.text)] if self.send_text else []) + \
                        [Part("audio", audio=audio)]
                    await client.limiter.wait()
                    with count_requests() as sent:
                        try:
                            spoken, transcript = await client.backend().speak(
                                parts, voice=self.voice, system_prompt=self.system_prompt)
                        finally:
                            self.requests += sent.value
                    target = self._save(key, s, spoken, transcript)
                return Produced(s.stimulus_id, str(target), "ok")
            except (BadInput, BackendError, OSError) as exc:
                return Produced(s.stimulus_id, None, "failed", f"no spoken answer: {exc}")

        try:
            return await client.map(one, stimuli, desc=f"{self.name}: speaking", unit="answer",
                                    postfix=lambda p: p.status)
        finally:
            await client.aclose()
            client.close()

    def _save(self, key: str, s: Stimulus, spoken: bytes, transcript: str) -> Path:
        """Write the answer atomically, named by its real format, with its transcript."""
        ext = ".mp3" if sniff_format(spoken) == "mp3" else ".wav"
        target = self.cache_dir / f"{key}{ext}"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{key}.{os.getpid()}{ext}")
        tmp.write_bytes(spoken)
        target.with_suffix(".json").write_text(json.dumps(
            {"stimulus": s.stimulus_id, "transcript": transcript, "model": self.model,
             "voice": self.voice}, ensure_ascii=False))
        os.replace(tmp, target)
        return target
