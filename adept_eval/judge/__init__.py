"""The speech judge: an audio LLM scores a spoken response 1-5 against a spoken instruction.

    from adept_eval.judge import JudgeConfig, JudgeItem, judge
    result = judge([JudgeItem("answer.wav", "Say it sadly: ...", "instruction/emotion")],
                   JudgeConfig(backend="gemini"))

``judge`` returns the summary (mean score with its interval and n, per-type means, histogram,
failures) and every item's score, verdict text and status; ``result["judge"]`` is the judge's
identity (backend, model, prompt sha256, sampling parameters).
"""

from adept_eval.judge.prompt import Prompt, PromptSet
from adept_eval.judge.runner import (
    ItemResult,
    JudgeConfig,
    JudgeItem,
    JudgeRunner,
    judge,
    summarize,
)
from adept_eval.judge.verdict import parse_verdict

__all__ = ["ItemResult", "JudgeConfig", "JudgeItem", "JudgeRunner", "Prompt", "PromptSet",
           "judge", "parse_verdict", "summarize"]
