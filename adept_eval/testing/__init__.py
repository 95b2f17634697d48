"""Loopback stand-ins for the services adept-eval talks to (Zenodo, an OpenAI-compatible judge,
the Hugging Face Hub), speaking the real protocols on 127.0.0.1. Used by the tests and the
benchmarks, and handy for trying a pipeline offline. Nothing here is used in a real run."""
