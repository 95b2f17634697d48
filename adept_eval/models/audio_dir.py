"""``audio-dir``: samples already synthesised, laid out as ``adept-eval manifest`` says.

    lm_eval --model audio-dir --model_args path=my_tts/,name=my-tts --tasks adept

For VStyle, samples are keyed by record id (``acoustic_properties-age-1.wav``); ``pattern``
names files otherwise, e.g. ``pattern={id}-Kimi`` for ``acoustic_properties-age-1-Kimi.mp3``.

Missing or unusable samples stop the run before anything is scored, with a list of them;
``on_missing=wrong`` goes on without them: ADEPT scores the questions that need them as wrong
answers (counted in ``failed``), VStyle counts the instructions left unanswered as failed
judgements (``n_failed``, never scored); each is marked failed in the logged samples.
A folder where none of the samples is usable is refused either way: nothing to score.
"""

from __future__ import annotations

from pathlib import Path


from adept_eval.signal.audio import find_audio, missing_audio_message
from adept_eval.options import text
from adept_eval.errors import SystemSetupError
from adept_eval.models.base import Produced, SpeechSystem, Stimulus


class AudioDirSystem(SpeechSystem):
    """A system whose samples are already in a folder, one file per stimulus id."""
    def __init__(self, path: str = "", name: str | None = None, pattern: str = "{id}", **kwargs):
        self.refuse_unknown_args(kwargs)
        # a JSON --model_args can give any type: one message naming the option, not a TypeError
        path = text(path, "path", "audio-dir --model_args")
        pattern = text(pattern, "pattern", "audio-dir --model_args")
        name = text(name, "name", "audio-dir --model_args", optional=True)
        if not path:
            raise SystemSetupError("audio-dir needs path=FOLDER in --model_args")
        if "{id}" not in pattern:
            raise SystemSetupError(f"audio-dir: pattern must contain {{id}}, got {pattern!r}")
        self.pattern = pattern
        self.folder = Path(path).expanduser()
        if not self.folder.is_dir():
            raise SystemSetupError(f"audio-dir: {self.folder} is not a folder")
        super().__init__(name=name or self.name_from_args({"path": path}), **kwargs)

    @classmethod
    def name_from_args(cls, args: dict) -> str:
        """The system's name: ``name=``, else the folder's name.

        Args:
            args: the ``--model_args``.

        Returns:
            The name.
        """
        return str(args.get("name") or Path(str(args.get("path", "audio-dir"))).resolve().name)

    def describe(self) -> dict:
        """The system's identity with its folder and file pattern.

        Returns:
            The description.
        """
        return {**super().describe(), "path": str(self.folder), "pattern": self.pattern}

    def locate(self, stimulus: Stimulus) -> Path | None:
        """The stimulus' file in the folder.

        Args:
            stimulus: the stimulus.

        Returns:
            The file, or None when there is none.
        """
        return find_audio(self.folder / self.pattern.replace("{id}", stimulus.stimulus_id))

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        """Each stimulus' file in the folder; a stimulus without one fails, naming the file.

        Args:
            stimuli: the stimuli.

        Returns:
            One ``Produced`` per stimulus, in order.
        """
        out = []
        for stimulus in stimuli:
            found = self.locate(stimulus)
            if found is None:
                stem = self.pattern.replace("{id}", stimulus.stimulus_id)
                out.append(Produced(stimulus.stimulus_id, None, "failed",
                                    f"{self.folder / stem}.wav "
                                    f"{missing_audio_message(self.folder / stem)}"))
            else:
                out.append(Produced(stimulus.stimulus_id, str(found), "ok"))
        return out
