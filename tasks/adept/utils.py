"""Thin lm-eval glue for the ADEPT tasks: everything lives in adept_eval.harness.adept."""

from adept_eval.harness.adept import (
    SUBCATEGORY_ACCURACY,
    accuracy,
    ci_high,
    ci_low,
    chance,
    doc_to_target,
    doc_to_text,
    graded_failed,
    graded_n,
    graded_undefined,
    load_questions,
    n_failed,
    n_responses,
    order_agreement,
    p_chance,
    process_results,
    prosody_distance,
    prosody_distance_ci_high,
    prosody_distance_ci_low,
    score_task,
)

globals().update(SUBCATEGORY_ACCURACY)
