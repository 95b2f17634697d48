"""The patches of lm-eval and evaluate that the start-up hook (``adept_eval.harness.startup``)
installs, one module per purpose. Each patch function takes the lm-eval (or evaluate) module it
patches; the start-up hook names them as lazy ``"module:attr"`` targets, so none of this is
imported before lm-eval itself is.

What runs depend on:

- ``registration``: our models in lm-eval's model registry; bare evaluate names (lm-eval
  0.4.13, evaluate 0.4.6);
- ``task_index``: our task folder in every TaskManager; lm-eval's own ~14,700 tasks not indexed
  for a run of only ours;
- ``metric_list``: a task of ours reports the metrics its YAML lists; a list it cannot report
  is refused naming the YAML (lm-eval 0.4.13's ``TaskFactory``);
- ``run``: ``simple_evaluate`` refuses secret options, begins and ends the run's context
  (``harness.run_context``), attaches the run's identity;
- ``results``: results named after the system; secrets never written; the Hub card of a
  results-only push skipped;
- ``arguments``: ``key=value`` arguments with braces; malformed JSON not echoed; a deliberate
  refusal is one line and exit status 2.

What people see (results unchanged by it):

- ``groups``: group rows pool what was actually scored (the suites' metric tables say how);
- ``display``: the printed table (headline first, counts as integers), quiet ``git describe``
  and task-loading hints.

Every wrapper falls back to lm-eval's own behaviour on an unexpected error of ours
(``fallback.fell_back``): a change in lm-eval can cost adept-eval a feature, never break
``lm_eval``. Deliberate refusals (``settings.SettingsError``) do propagate.
"""
