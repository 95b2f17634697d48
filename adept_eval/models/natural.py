"""``adept-natural``: answers with ADEPT's own natural recordings.

A sanity check of the pipeline and the ceiling of each listener: a listener that cannot
recognise the natural recordings cannot be trusted on synthetic ones.
"""

from __future__ import annotations


from adept_eval.models.base import Produced, SpeechSystem, Stimulus


class NaturalSystem(SpeechSystem):
    """ADEPT's natural recordings as a system: the ceiling every other system is compared with."""
    default_name = "adept-natural"

    def produce(self, stimuli: list[Stimulus]) -> list[Produced]:
        """Each stimulus' natural reference recording.

        Args:
            stimuli: the stimuli.

        Returns:
            One usable ``Produced`` per stimulus.
        """
        return [Produced(s.stimulus_id, s.reference_audio, "ok") for s in stimuli]
