"""speech_judge: an audio LLM rates spoken responses 1-5 against spoken style instructions.

A Hugging Face ``evaluate`` module; the work is done by ``adept_eval.judge``.
"""

import datasets
import evaluate

from adept_eval.judge import JudgeConfig, JudgeItem, judge
from adept_eval.judge.runner import METRIC_SERVER_OPTIONS
from adept_eval.metrics import audio_feature, given_audio, one_audio_form, refuse_empty

_CITATION = """\
@article{zhan2025vstyle,
  title   = {{VStyle}: A Benchmark for Voice Style Adaptation with Spoken Instructions},
  author  = {Zhan, Jun and others},
  journal = {arXiv preprint arXiv:2509.09716},
  year    = {2025}
}
"""

_DESCRIPTION = """\
An audio-capable LLM (Gemini, OpenAI audio models, or a Qwen-Omni/Qwen-Audio model served by vLLM
or SGLang) hears a spoken response and reads the transcript of the spoken instruction it answers,
then rates it on a 5-point scale for content, style adherence and naturalness with VStyle's judge
prompt, ending its verdict with `Final score: [[N]]`. Unparseable verdicts are asked again and then
counted as failures, never as scores. Judgements are cached by content.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: spoken responses: file paths, or {"array": [...], "sampling_rate": int}, mixed
        in any order.
    references: transcripts of the spoken instructions.
    instruction_types: each instruction's type, e.g. "instruction/emotion_command" (fills the
        prompt's {instruction_type}; selects a per-type prompt when `prompts` is given).
    instruction_audio: optional list of spoken instructions (paths), sent before the prompt when
        include_instruction_audio=True.
    backend: "openai" (any OpenAI-compatible endpoint, with base_url) or "gemini".
    model: the judge model, e.g. "gemini-2.5-pro", "gpt-4o-audio-preview", "Qwen/Qwen2.5-Omni-7B".
    base_url: endpoint of an OpenAI-compatible server (vLLM, SGLang, a proxy).
    api_key_env: name of the environment variable holding the key (never the key itself). A
        custom base_url gets a key only this way; OPENAI_API_KEY / GEMINI_API_KEY go only to
        their own services.
    prompt: template file or text (default: VStyle's instruction prompt, shipped with the package).
    prompts: {instruction type or category: template file or text}.
    judgements: k judgements per item, aggregated by median (default 1).
    temperature, max_tokens, seed: sampling parameters (temperature defaults to 0 for k=1).
    concurrency: requests in flight (default 4; also the connection pool's size); rpm: requests
        per minute limit.
    audio_format: "original" (default: MP3 and 16-bit WAV files are sent as they are, other
        audio as 16-bit WAV at audio_rate) or "wav" (always convert).
    timeout, max_retries, max_reasks: per-request timeout, transport retries, re-asks.
    cache_path: sqlite cache file ("" disables; default under $ADEPT_EVAL_HOME).
    progress: show a progress bar (default True).
Returns:
    score, score_ci95, score_by_type, histogram (1-5), n, n_judged, n_failed, failure_rate,
    n_requests (HTTP requests actually sent, retries included), n_cached_judgements,
    judge (backend, model, prompt sha256, sampling parameters) and items (per item: score,
    scores, verdicts, status, detail).
Examples:
    >>> judge = evaluate.load("speech_judge")
    >>> judge.compute(predictions=["answer.wav"], references=["Say it sadly: I lost my keys."],
    ...               instruction_types=["instruction/emotion"], backend="gemini")
"""

_TEXT = datasets.Value("string")
_CONFIG_KEYS = {f for f in JudgeConfig.__dataclass_fields__}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpeechJudge(evaluate.Metric):
    """The ``speech_judge`` evaluate module (see the module's description)."""
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # paths and arrays, mixed in any order, in one form (``one_audio_form``)
            features=datasets.Features({"predictions": audio_feature(), "references": _TEXT,
                                        "instruction_types": _TEXT}),
            reference_urls=["https://arxiv.org/abs/2509.09716"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """As evaluate's, with empty lists or a None input one clear error (``refuse_empty``)."""
        refuse_empty("speech_judge", predictions, references=references,
                     instruction_types=kwargs.get("instruction_types"))
        return super().add_batch(predictions=one_audio_form(predictions), references=references,
                                 **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """As evaluate's, the prediction stored in the one form of paths and arrays."""
        if prediction is not None:
            prediction = one_audio_form([prediction])[0]
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, instruction_types, instruction_audio=None,
                 progress=True, prompts=None, **options):
        unknown = set(options) - _CONFIG_KEYS
        if unknown:
            hint = ("; a key is never passed as a value (it would end up in code and logs): put "
                    "it in an environment variable and name that variable with api_key_env=NAME"
                    if unknown & {"api_key", "key", "token"} else "")
            raise ValueError(f"speech_judge: unknown option(s) {', '.join(sorted(unknown))}"
                             f"{hint}")
        if instruction_audio is not None and len(instruction_audio) != len(predictions):
            raise ValueError("instruction_audio must have one entry per prediction")
        config = JudgeConfig(prompts=tuple(sorted((prompts or {}).items())), **options)
        items = [JudgeItem(given_audio(p), r, t,
                           instruction_audio[i] if instruction_audio else None, str(i))
                 for i, (p, r, t) in enumerate(zip(predictions, references, instruction_types))]
        return judge(items, config, progress=progress, server_options=METRIC_SERVER_OPTIONS)
