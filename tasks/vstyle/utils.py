"""Thin lm-eval glue for the VStyle tasks: everything lives in adept_eval.vstyle_harness."""

from adept_eval.vstyle_harness import (  # noqa: F401
    SUBCATEGORY_SCORES,
    category_score,
    ci_high,
    ci_low,
    doc_to_target,
    doc_to_text,
    failure_rate,
    judge_responses,
    load_vstyle,
    n_failed,
    n_judged,
    plain_mean,
    process_results,
)

globals().update(SUBCATEGORY_SCORES)
