from .speech_judge import SpeechJudge  # noqa: F401
