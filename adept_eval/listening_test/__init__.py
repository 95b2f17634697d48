"""ADEPT's own method, built in: a web listening test with people, and honest statistics.

    adept-eval listening-test build my_tts/ -o my_test      # design + blinded audio
    adept-eval listening-test serve my_test                  # the web app (prints its URL)
    adept-eval listening-test status my_test                 # live counts and exclusions
    adept-eval listening-test export my_test -o answers.csv  # the `human` listener's file

Modules: ``design`` (who hears what), ``store`` (SQLite responses), ``session`` (a
participant's way through the test), ``media`` (audio served from memory), ``app`` (the
Starlette app), ``guard`` (a deadline for request headers), ``mirror`` (responses pushed to a
private Hub dataset), ``analysis`` (exclusions, clustered intervals, agreement, charts),
``export`` (the responses file), ``plan`` (how many participants). Their error classes live in
``adept_eval.errors``.
"""

from adept_eval.listening_test.analysis import (
    analyse,
    cluster_bootstrap,
    fleiss_kappa,
    screen,
    step4_table,
)
from adept_eval.listening_test.design import TestConfig, build_test, load_test, plan_for
from adept_eval.listening_test.export import export
from adept_eval.listening_test.store import Store

__all__ = ["Store", "TestConfig", "analyse", "build_test", "cluster_bootstrap",
           "create_app", "export", "fleiss_kappa", "load_test", "plan_for", "screen",
           "step4_table"]


def create_app(folder, **kwargs):
    """Build the Starlette app for a built test (needs the ``listening-test`` extra).

    Args:
        folder: The test folder.
        **kwargs: ``app.create_app``'s options.

    Returns:
        The app.
    """
    from adept_eval.listening_test.app import create_app as _create

    return _create(folder, **kwargs)
