"""Realistic validation of listeners: ADEPT-layout corpora spoken by real TTS engines.

The maintainers' bench, run from a clone (``python benchmarks/realistic_validation.py``): it is
not part of the installed package, and the package never imports it.

``sentences`` holds the English sentences and their prosodic plans, ``engines`` renders them
with espeak-ng (SSML) or festival (plain text, prosody imposed afterwards with Praat PSOLA),
``systems`` builds the corpora and the simulated systems, ``baseline`` is a naive
global-feature listener to compare against, and ``benchmark`` scores listeners on them.
"""
