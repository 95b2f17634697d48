"""The lm-eval layer: ADEPT's and VStyle's task functions, option routing (``settings``), the
run's context (``run_context``), the patches of lm-eval (``integration``) and the start-up hook
(``startup``) that installs them.

Empty on purpose: the start-up hook imports ``adept_eval.harness.startup`` at every interpreter
start-up, so importing this package must cost nothing."""
