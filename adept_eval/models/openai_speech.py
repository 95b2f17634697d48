"""``openai-speech``: a live spoken-dialogue model behind an OpenAI-compatible chat API with audio
output (OpenAI's audio models, or an omni model served by vLLM / SGLang).

    lm_eval --model openai-speech --model_args model=gpt-4o-audio-preview,voice=alloy \\
        --tasks vstyle_en --metadata judge_backend=gemini

Each stimulus's audio (the spoken VStyle instruction) is sent as an ``input_audio`` part; the
spoken answer is saved as WAV with its transcript next to it (``.json``). Answers are cached by
content (model, voice, system prompt, the instruction audio), so a rerun costs nothing and a run
killed halfway resumes. Same machinery as the judge: bounded concurrency, a requests-per-minute
limit, the SDK's retries honouring Retry-After. A failed answer fails that stimulus only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

from tqdm.auto import tqdm

from ..judge.backends import BackendError, Part, get_backend
from ..judge.runner import BadInput, JudgeConfig, RateLimiter, prepare_audio, run_sync
from .base import Produced, SpeechSystem, Stimulus, SystemSetupError


class OpenAISpeechSystem(SpeechSystem):
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
        self.send_text = str(send_text).lower() in ("1", "true", "yes")
        self.concurrency, self.rpm = int(concurrency), (float(rpm) if rpm else None)
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        if cache_dir is None:
            from ..corpus import cache_home

            cache_dir = cache_home() / "systems"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)
        self.cache_dir = Path(cache_dir).expanduser() / safe
        self.requests = 0
        # fail now if the key is missing, not after the corpus has been prepared
        get_backend("openai", model=model, base_url=base_url, api_key_env=api_key_env)

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        return str(args.get("name") or args.get("model") or "openai-speech")

    def describe(self) -> dict:
        return {**super().describe(), "speech_model": self.model, "voice": self.voice}

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        return run_sync(self._produce(stimuli))

    async def _produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        backend = get_backend("openai", model=self.model, base_url=self.base_url,
                              api_key_env=self.api_key_env, timeout=self.timeout,
                              max_retries=self.max_retries)
        sem, limiter = asyncio.Semaphore(max(1, self.concurrency)), RateLimiter(self.rpm)
        bar = tqdm(total=len(stimuli), desc=f"{self.name}: speaking", unit="answer")
        prep = JudgeConfig(max_audio_seconds=600)

        async def one(s: Stimulus) -> Produced:
            async with sem:
                try:
                    wav_in = await asyncio.to_thread(prepare_audio, s.reference_audio, prep,
                                                     "instruction audio")
                    key = hashlib.sha256(json.dumps(
                        [self.model, self.voice, self.system_prompt,
                         s.text if self.send_text else "",
                         hashlib.sha256(wav_in).hexdigest()]).encode()).hexdigest()[:32]
                    target = self.cache_dir / f"{key}.wav"
                    if not (target.exists() and target.stat().st_size > 0):
                        parts = ([Part("text", text=s.text)] if self.send_text else []) + \
                            [Part("audio", wav=wav_in)]
                        await limiter.wait()
                        self.requests += 1
                        wav, transcript = await backend.speak(
                            parts, voice=self.voice, system_prompt=self.system_prompt)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        tmp = target.with_name(f".{key}.{os.getpid()}.wav")
                        tmp.write_bytes(wav)
                        target.with_suffix(".json").write_text(json.dumps(
                            {"stimulus": s.stimulus_id, "transcript": transcript,
                             "model": self.model, "voice": self.voice}, ensure_ascii=False))
                        os.replace(tmp, target)
                    return Produced(s.stimulus_id, str(target), "ok")
                except (BadInput, BackendError, OSError) as exc:
                    return Produced(s.stimulus_id, None, "failed", f"no spoken answer: {exc}")
                finally:
                    bar.update(1)

        try:
            return list(await asyncio.gather(*(one(s) for s in stimuli)))
        finally:
            bar.close()
            await backend.aclose()
