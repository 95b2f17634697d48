"""Systems that synthesise on demand, with a content-keyed output cache.

``InProcessTTS`` is the documented base class for a model living in the same Python process:

    from adept_eval.models import InProcessTTS

    class MyTTS(InProcessTTS):
        def synthesize(self, text, reference_audio):      # reference_audio: adept_eval.signal.audio.Audio
            samples, rate = my_model(text, reference_audio.samples, reference_audio.rate)
            return samples, rate                           # or an Audio

    lm_eval.simple_evaluate(model=MyTTS(name="my-tts"), tasks=["adept"])

Outputs are cached under ``cache_dir`` (default: the adept-eval cache) by a key over the system
name, its ``version()``, the text and the reference audio's bytes, so a rerun (or a run killed
halfway) synthesises only what is missing; only an output that passes the audio check is
cached, and a cached one that fails it is synthesised again. A stimulus whose synthesis fails
is recorded as failed and scored as a wrong answer; the run goes on - unless every synthesis
failed: then it stops with one message, as there is nothing to score.

``concurrency=N`` (``--model_args``; default 1) runs up to N syntheses at once, on threads:
for a command-line synthesiser (``tts-command``) N processes, for an in-process model N calls
of ``synthesize`` (thread-safe models only). The samples, their order and the failure
accounting are those of one at a time; only the wall-clock time changes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from adept_eval.errors import SystemSetupError
from adept_eval.signal.audio import Audio, from_array, read_audio, write_wav
from adept_eval.models.base import (
    Produced,
    SpeechSystem,
    Stimulus,
    first_reasons,
    sample_problem,
)

log = logging.getLogger(__name__)

#: failures shown one by one on the console; the rest are counted (every one is in the samples)
FAILURES_SHOWN = 5


class SynthesizingSystem(SpeechSystem):
    """A system that synthesises each sample once and caches it, keyed by ``cache_key``."""
    default_on_missing = "wrong"

    def __init__(self, name: str | None = None, cache_dir: str | None = None,
                 concurrency: int = 1, **kwargs):
        from adept_eval.options import number, text

        super().__init__(name=name, **kwargs)
        #: syntheses run at once (threads); 1 is one at a time
        self.concurrency = number(concurrency, "concurrency", "--model_args", whole=True,
                                  least=1)
        cache_dir = text(cache_dir, "cache_dir", "--model_args", optional=True)
        if cache_dir is None:
            from adept_eval.paths import cache_home

            cache_dir = cache_home() / "systems"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)
        self.cache_dir = Path(cache_dir).expanduser() / safe
        # a file named as cache_dir is one message now, not a NotADirectoryError traceback
        # from the first sample synthesised
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SystemSetupError(f"{self.name}: cache_dir={cache_dir}: cannot hold the "
                                   f"samples ({exc.strerror or exc}): give a folder") from None
        self.synthesized = 0
        self.reused = 0

    def version(self) -> str:
        """Part of the cache key: change it when the model changes."""
        return ""

    def cache_key(self, stimulus: Stimulus) -> str:
        """The cache key of a stimulus' sample: a digest of the system and what it is asked.

        Args:
            stimulus: the stimulus.

        Returns:
            The key (hex).
        """
        digest = hashlib.sha256()
        for part in (type(self).__name__, self.name, self.version(), stimulus.text):
            digest.update(part.encode())
            digest.update(b"\0")
        with open(stimulus.reference_audio, "rb") as fh:
            digest.update(hashlib.sha256(fh.read()).digest())
        return digest.hexdigest()[:32]

    def synthesize_to(self, stimulus: Stimulus, output: Path) -> None:
        """Write the sample for ``stimulus`` to ``output`` (a .wav path); raise on failure."""
        raise NotImplementedError

    def _checked(self, produced, wanted):
        """``produce`` checked every output it cached or reused (``check_samples``): the
        base class's second pass would decode each file again for the same verdict."""
        return produced

    def _reusable(self, stimulus: Stimulus, target: Path) -> bool:
        """Whether the cached output ``target`` can be used as the stimulus' sample.

        Args:
            stimulus: the stimulus.
            target: its cache file.

        Returns:
            True when the file exists, is not empty and (with ``check_samples``) passes the
            audio check; a cached output that fails the check is logged, to be synthesised again.
        """
        if not (target.exists() and target.stat().st_size > 0):
            return False
        stale = sample_problem(target, stimulus) if self.check_samples else ""
        if not stale:
            return True
        log.info("%s: cached output of %s is unusable (%s): synthesising it again",
                 self.name, stimulus.stimulus_id, stale)
        return False

    def _synthesize_into_cache(self, stimulus: Stimulus, target: Path) -> None:
        """Synthesise the stimulus into a temporary file and move it to ``target`` once it
        passes the audio check; the temporary file is removed on failure, so a rerun
        synthesises it again.

        Args:
            stimulus: the stimulus.
            target: its cache file.

        Raises:
            Exception: the synthesis failed, wrote nothing, or wrote unusable audio.
        """
        target.parent.mkdir(parents=True, exist_ok=True)
        # one temporary file per process and thread: concurrent syntheses never share one
        tmp = target.with_name(f".{target.stem}.{os.getpid()}.{threading.get_ident()}.wav")
        try:
            self.synthesize_to(stimulus, tmp)
            if not tmp.exists() or tmp.stat().st_size == 0:
                raise RuntimeError(f"no audio was written to {tmp}")
            problem = sample_problem(tmp, stimulus) if self.check_samples else ""
            if problem:
                raise RuntimeError("its output is unusable: "
                                   + problem.replace(str(tmp), "the output"))
            os.replace(tmp, target)
        except Exception:
            tmp.unlink(missing_ok=True)
            raise

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        """Each stimulus' sample: from the cache, or synthesised (and cached) when it is not
        there, up to ``concurrency`` at once. With ``check_samples`` (the default) an output is
        cached only once it passes the audio check (``base.sample_problem``: decodable, not
        silent, near the reference's length...), and a cached output that fails it is
        synthesised again: a synthesiser that wrote garbage once, then was fixed, gets its
        samples on the rerun ("a rerun synthesises only what is missing") instead of the
        garbage from the cache for ever. A failure fails its stimulus only; when every
        synthesis fails, though, there is nothing to score, and the run stops with one message
        saying so and why (its first failures), not an accuracy of 0 from samples that never
        existed.

        Args:
            stimuli: the stimuli to produce samples for.

        Returns:
            One ``Produced`` per stimulus, in order.

        Raises:
            SystemSetupError: every synthesis failed.
        """
        out: list[Produced | None] = [None] * len(stimuli)
        todo = []  # (index, stimulus, cache file) of the samples to synthesise
        with tqdm(total=len(stimuli), desc=f"{self.name}: synthesising", unit="sample") as bar:
            for index, stimulus in enumerate(stimuli):
                target = self.cache_dir / f"{self.cache_key(stimulus)}.wav"
                if self._reusable(stimulus, target):
                    self.reused += 1
                    out[index] = Produced(stimulus.stimulus_id, str(target), "ok")
                    bar.update(1)
                else:
                    todo.append((index, stimulus, target))
            for index, produced in self._synthesize_all(todo, bar):
                out[index] = produced
        failed = [p for p in out if p.status == "failed"]
        self.synthesized += len(todo) - len(failed)
        self._log_failures(failed, len(stimuli))
        log.info("%s: %d synthesised, %d reused from %s", self.name, self.synthesized,
                 self.reused, self.cache_dir)
        if stimuli and len(failed) == len(stimuli):
            raise SystemSetupError(
                f"{self.name}: no sample was produced: all {len(failed)} syntheses failed, so "
                f"there is nothing to score. {first_reasons(out, logged=False)}")
        return out

    def _synthesize_one(self, stimulus: Stimulus, target: Path) -> Produced:
        """One stimulus synthesised into the cache, or its failure (never raised: one bad
        stimulus must not end a long run)."""
        try:
            self._synthesize_into_cache(stimulus, target)
        except Exception as exc:
            return Produced(stimulus.stimulus_id, None, "failed", f"synthesis failed: {exc}")
        return Produced(stimulus.stimulus_id, str(target), "ok")

    def _synthesize_all(self, todo: list, bar):
        """Synthesise ``todo``'s stimuli, ``concurrency`` at once, advancing ``bar`` as each
        ends.

        Args:
            todo: (index, stimulus, cache file) of each sample to synthesise.
            bar: the progress bar.

        Yields:
            (index, ``Produced``) for each, as it ends.
        """
        if self.concurrency == 1 or len(todo) < 2:
            for index, stimulus, target in todo:
                yield index, self._synthesize_one(stimulus, target)
                bar.update(1)
            return
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo)),
                                thread_name_prefix=f"{self.name}-synth") as pool:
            running = {pool.submit(self._synthesize_one, stimulus, target): index
                       for index, stimulus, target in todo}
            for done in as_completed(running):
                yield running[done], done.result()
                bar.update(1)

    def _log_failures(self, failed: list[Produced], total: int) -> None:
        """Warn of the first ``FAILURES_SHOWN`` failed syntheses, in the stimuli's order, and
        count the rest."""
        for produced in failed[:FAILURES_SHOWN]:
            log.warning("%s: synthesis of %s failed: %s", self.name, produced.stimulus_id,
                        produced.problem.removeprefix("synthesis failed: "))
        if len(failed) > FAILURES_SHOWN:
            log.warning("%s: %d more syntheses failed (%d of %d in all%s)", self.name,
                        len(failed) - FAILURES_SHOWN, len(failed), total,
                        "; each reason is in the logged samples" if len(failed) < total
                        else "")


class InProcessTTS(SynthesizingSystem):
    """A TTS model in this Python process: subclass it and implement ``synthesize``.

    ``synthesize(text, reference_audio)`` is called once per stimulus (cached results are not
    asked again). ``text`` is the sentence to speak; ``reference_audio`` is an
    ``adept_eval.signal.audio.Audio``, the natural ADEPT recording whose prosody to transfer, already
    decoded: ``.samples`` (mono float32 numpy array in [-1, 1]), ``.rate`` (Hz), ``.duration``
    (s) and ``.path`` (the file, for models that want to read it themselves). Return either an
    ``Audio`` or ``(samples, rate)``: a 1-D float array in [-1, 1] or integer PCM (int16, int32,
    uint8: scaled by its type's full scale) - or (n, channels), which is downmixed - and an int
    rate. Raising fails that stimulus only (its questions are scored wrong
    and counted in ``failed``, with your exception's message in the logged samples).
    """

    def synthesize(self, text: str, reference_audio: Audio):
        """Synthesise ``text`` with the prosody of ``reference_audio`` (see the class).

        Args:
            text: the sentence to speak.
            reference_audio: the natural recording whose prosody to transfer.

        Returns:
            An ``Audio`` or ``(samples, rate)``.

        Raises:
            NotImplementedError: a subclass must implement it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  "synthesize(text, reference_audio)")

    def synthesize_to(self, stimulus: Stimulus, output: Path) -> None:
        """Write ``synthesize``'s result for the stimulus to ``output`` as a WAV file.

        Args:
            stimulus: the stimulus.
            output: the .wav path.

        Raises:
            TypeError: ``synthesize`` returned something that is not audio.
        """
        result = self.synthesize(stimulus.text, read_audio(stimulus.reference_audio))
        if not isinstance(result, Audio):
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"synthesize() returned {type(result).__name__}; it must return "
                                "an adept_eval.signal.audio.Audio or (samples, rate)")
            samples, rate = result
            samples = np.asarray(samples)
            if samples.size == 0 or not np.issubdtype(samples.dtype, np.number):
                raise TypeError("synthesize() returned no samples (want a non-empty numeric "
                                "array in [-1, 1])")
            result = from_array(_checked_pcm(samples), int(rate))
        write_wav(output, result)


def _checked_pcm(samples: np.ndarray) -> np.ndarray:
    """``synthesize()``'s samples, refusing 64-bit integers: floats cast by mistake (e.g.
    np.round(x * 32767).astype(int)), which no full scale fits. Integer PCM of up to 32 bits is
    scaled by ``audio.from_array``, the one home for that."""
    if np.issubdtype(samples.dtype, np.integer) and samples.dtype.itemsize > 4:
        raise TypeError(f"synthesize() returned {samples.dtype} samples: return floats in "
                        "[-1, 1], or PCM as int16, int32 or uint8 (a 64-bit integer array is "
                        "usually floats cast by mistake, e.g. np.round(x * 32767).astype(int))")
    return samples
