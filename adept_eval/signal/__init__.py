"""The signal layer: reading and checking audio, prosodic features, speech presence and content
keys. Knows nothing of corpora, listening tests or lm-eval."""
