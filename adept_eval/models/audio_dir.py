"""``audio-dir``: samples already synthesised, laid out as ``adept-eval manifest`` says.

    lm_eval --model audio-dir --model_args path=my_tts/,name=my-tts --tasks adept

Missing or unusable samples stop the run before anything is scored, with a list of them;
``on_missing=wrong`` scores the questions that need them as wrong answers instead (each such
sample is marked ``failed`` in the logged samples and counted in the ``failed`` metric).
"""

from __future__ import annotations

from pathlib import Path


from ..audio import AUDIO_EXTENSIONS, find_audio
from .base import Produced, SpeechSystem, Stimulus, SystemSetupError


class AudioDirSystem(SpeechSystem):
    def __init__(self, path: str = "", name: str | None = None, **kwargs):
        if not path:
            raise SystemSetupError("audio-dir needs path=FOLDER in --model_args")
        self.folder = Path(path).expanduser()
        if not self.folder.is_dir():
            raise SystemSetupError(f"audio-dir: {self.folder} is not a folder")
        super().__init__(name=name or self.name_from_args({"path": path}), **kwargs)

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        return str(args.get("name") or Path(str(args.get("path", "audio-dir"))).resolve().name)

    def describe(self) -> dict:
        return {**super().describe(), "path": str(self.folder)}

    def locate(self, stimulus: Stimulus) -> Path | None:
        return find_audio(self.folder / stimulus.stimulus_id)

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        out = []
        for s in stimuli:
            found = self.locate(s)
            if found is None:
                out.append(Produced(s.stimulus_id, None, "failed",
                                    f"{self.folder / s.stimulus_id}.wav missing (also tried "
                                    f"{', '.join(AUDIO_EXTENSIONS[1:])})"))
            else:
                out.append(Produced(s.stimulus_id, str(found), "ok"))
        return out
