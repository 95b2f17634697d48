"""Reading runs (``adept_eval.results.runs``): when a run was made, and that reading one
imports nothing of publishing, settings, the judge or the LLM client."""

import os
import subprocess
import sys
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


#: what reading, reporting, comparing or ranking runs never imports: publishing (the Hub
#: client), option routing and secrets (``harness``), the speech judge and the LLM client
NOT_FOR_READING = ("adept_eval.results.publish", "adept_eval.harness", "adept_eval.judge",
                   "adept_eval.llm", "huggingface_hub")


def test_reading_runs_imports_no_publishing_settings_judge_or_llm():
    """A fresh interpreter importing the reading side of the results layer loads none of
    ``NOT_FOR_READING`` beyond what the interpreter started with (the lm-eval start-up hook,
    ``harness.startup``, is loaded at every start): the leaderboard imports publishing only
    inside its push."""
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "import adept_eval.results.runs, adept_eval.results.report\n"
            "import adept_eval.results.compare, adept_eval.results.leaderboard\n"
            f"banned = {NOT_FOR_READING!r}\n"
            "print('\\n'.join(sorted(m for m in set(sys.modules) - before\n"
            "                 if any(m == b or m.startswith(b + '.') for b in banned))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], done.stdout
