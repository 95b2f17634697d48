"""The corpora layer: ADEPT's published facts, fetching and verifying the corpus, the listening
tests' questions, what a system must synthesise, the synthetic stand-in corpus, and VStyle's
records. Reads audio through :mod:`adept_eval.signal`; knows nothing of scoring or lm-eval."""
