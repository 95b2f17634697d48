"""The suite's own rule: under CI=true (as .ci/run runs it) nothing may be skipped for being
missing - neither a test nor a whole module skipped while it is collected (a module-level
``pytest.importorskip``) - except test_readme's documented "not run:" rules."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

PROBES = {
    "test_module_skip.py": 'import pytest\npytest.importorskip("no_such_module_xyz", '
                           'reason="needs xyz")\n\ndef test_x():\n    pass\n',
    "test_inner_skip.py": 'import pytest\n\ndef test_y():\n    pytest.skip("needs abc")\n',
    "test_allowed.py": 'import pytest\n\ndef test_z():\n    pytest.skip("not run: serves '
                       'until stopped")\n',
}


@pytest.mark.parametrize("probe, fails, said", [
    ("test_module_skip.py", True, "skipped while collected under CI=true, where nothing may be "
                                  "missing: needs xyz"),
    ("test_inner_skip.py", True, "skipped under CI=true, where nothing may be missing: needs abc"),
    ("test_allowed.py", False, ""),
])
@pytest.mark.parametrize("ci", ["true", ""])
def test_a_skip_under_ci_is_a_failure(probe, fails, said, ci, tmp_path):
    for helper in ("conftest.py", "faults.py"):
        shutil.copy(TESTS / helper, tmp_path / helper)
    (tmp_path / probe).write_text(PROBES[probe])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "CI": ci})
    if ci and fails:
        assert done.returncode != 0 and said in done.stdout, done.stdout[-2000:]
    else:  # off CI a missing piece is an honest skip (users' machines)
        # (5: pytest's "no tests ran", when the only module was skipped whole)
        assert done.returncode in (0, 5), done.stdout[-2000:]
        assert "skipped" in done.stdout
