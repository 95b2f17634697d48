"""``prosody.extract`` on quiet takes: the same speech frames and the same features apart from
level, whatever the level a take was recorded at (real TTS speech from espeak-ng, skipping with
the Debian package to install where it is absent)."""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.signal.audio import from_array
from adept_eval.signal.prosody import extract

from sounds import RATE, quiet_take, sad_takes, synthetic_speech


@pytest.mark.parametrize("down_db", [30.0, 40.0])
def test_a_take_recorded_30_to_40_db_quieter_has_the_same_features_but_its_level(down_db):
    """The speech and noise rules are relative to the loudest frame and the recording's own
    floor, and Praat's pitch tracker to the loudest sample, so nothing but the level moves:
    the same frames are speech, the same pitch, energies lower by ``down_db`` (within 0.25 dB:
    energies are floored at -100 dB, where the quietest frames of the quiet copy reach) and the
    same cepstra (within 0.01)."""
    takes = [(synthetic_speech(), RATE)] + [(a.samples, a.rate) for a in sad_takes()]
    for x, rate in takes:
        loud = quiet_take(x, rate, rms_dbfs=-20.0, noise_below_peak_db=50.0)
        full = extract(from_array(loud, rate))
        quiet = extract(from_array(loud * 10 ** (-down_db / 20), rate))
        assert quiet.n == full.n and np.array_equal(quiet.speech, full.speech), rate
        assert np.array_equal(np.isnan(quiet.f0), np.isnan(full.f0))
        voiced = ~np.isnan(full.f0)
        assert np.allclose(quiet.f0[voiced], full.f0[voiced], atol=1e-6)
        drop = (full.energy - quiet.energy)[full.speech]
        assert np.all(np.abs(drop - down_db) < 0.25), (drop.min(), drop.max())
        assert np.allclose(quiet.mfcc, full.mfcc, atol=0.01)
