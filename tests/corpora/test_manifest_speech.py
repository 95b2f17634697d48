"""``manifest.check_folder`` refuses a sample that is not speech, naming its file."""

from __future__ import annotations

import shutil

import soundfile as sf

from sounds import RATE, tone


def test_check_refuses_a_tone_naming_the_file(corpus, synthetic_root, tmp_path):
    from adept_eval.corpora.manifest import check_folder

    system = tmp_path / "sys"
    shutil.copytree(synthetic_root / "wav_44khz", system)
    bad = system / "emotion" / "joy" / "ad00_0001.wav"
    info = sf.info(str(bad))
    sf.write(str(bad), tone(info.duration), RATE)
    result = check_folder(corpus, system, stimuli=["emotion/joy/ad00_0001",
                                                   "emotion/anger/ad00_0001"], progress=False)
    problems = [p for p in result.errors if p.kind == "no_speech"]
    assert len(problems) == 1 and str(bad) in problems[0].message
    assert "no speech" in problems[0].message
