"""Thin lm-eval glue for the VStyle tasks: everything lives in adept_eval.harness.vstyle."""

from adept_eval.harness.vstyle import (
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
