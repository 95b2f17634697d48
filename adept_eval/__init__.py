"""adept-eval: prosody-transfer (ADEPT) and spoken-dialogue (speech judge) evaluation for
EleutherAI's lm-evaluation-harness."""


def __getattr__(name: str):
    # lazy, so the start-up hook that imports this package costs next to nothing
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("adept-eval")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+local"
    raise AttributeError(name)
