"""The names every layer of the lm-eval glue shares, and nothing else: adept-eval's models (a
``Registry`` of lazy ``"module:attr"`` targets), where its task YAMLs and evaluate modules are.

Standard library only, on the package's lowest layers (docs/contributing.md): the start-up hook
(``harness.startup``) imports it at every interpreter start-up, so it must stay this small.
"""

from __future__ import annotations

from adept_eval.registry import Registry

#: the systems under test, as lm-eval models (``--model NAME``): lm-eval's registry gets these
#: same lazy targets from the start-up hook, so no model module is imported before it is used
MODELS = Registry("model", {
    "adept-natural": "adept_eval.models.natural:NaturalSystem",
    "audio-dir": "adept_eval.models.audio_dir:AudioDirSystem",
    "tts-command": "adept_eval.models.tts_command:TTSCommandSystem",
    "openai-speech": "adept_eval.models.openai_speech:OpenAISpeechSystem",
})


def task_dir():
    """Where the task YAMLs live: ``adept_eval/tasks`` once installed, ``tasks/`` in a checkout."""
    from pathlib import Path

    installed = Path(__file__).resolve().parent / "tasks"
    return installed if installed.is_dir() else Path(__file__).resolve().parents[1] / "tasks"


def speech_judge_path():
    """The installed evaluate module: ``evaluate.load(str(speech_judge_path()))`` always works."""
    from pathlib import Path

    return Path(__file__).resolve().parent / "metrics" / "speech_judge" / "speech_judge.py"


def prosody_transfer_path():
    """The installed ``prosody_transfer`` evaluate module (graded prosody-transfer figures)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent / "metrics" / "prosody_transfer"
    return folder / "prosody_transfer.py"


# bare evaluate names that resolve to our installed modules
EVALUATE_MODULES = {"speech_judge": speech_judge_path, "prosody_transfer": prosody_transfer_path}
