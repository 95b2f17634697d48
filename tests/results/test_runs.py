"""``hub.Run.when``: when a run was made, for choosing the newest and dating a leaderboard row."""

import os
from datetime import datetime

from adept_eval.results.runs import Run


def test_a_run_is_dated_by_its_name_as_its_timestamp_reads_it(tmp_path):
    """Without lm-eval's ``date`` a run is dated by the stamp ``Run.timestamp`` reads from its
    file name - ``results_<stamp>.json``, or a file given by path under another name, its stem -
    and only a name that is no stamp falls back to the file's modification time."""
    stamp = datetime.fromisoformat("2024-06-01T10:20:30").timestamp()
    mtime = stamp + 86400 * 30
    for name in ("results_2024-06-01T10-20-30.json", "2024-06-01T10-20-30.json"):
        path = tmp_path / name
        path.write_text("{}")
        os.utime(path, (mtime, mtime))
        run = Run(path, {})
        assert run.timestamp == "2024-06-01T10-20-30"
        assert run.when == stamp, name
    other = tmp_path / "my-run.json"
    other.write_text("{}")
    os.utime(other, (mtime, mtime))
    assert Run(other, {}).when == mtime
    assert Run(other, {"date": 12.5}).when == 12.5
