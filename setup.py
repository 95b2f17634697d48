"""Everything is declared in setup.cfg; this file only adds the lm-eval start-up hook.

setuptools has no declarative way to put a .pth file at the top of site-packages, which is
how adept-eval makes plain ``lm_eval --tasks adept_...`` work (see adept_eval/harness/startup.py).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "adept_eval_lm_eval.pth"


class BuildWithPth(build_py):
    def run(self):
        super().run()
        # A wheel installs build_lib's top level into site-packages. An editable install
        # (pip install -e, PEP 660) does not: setuptools maps the packages to the source tree
        # and builds the wheel from the folder it points the install command at (where it
        # writes the files that are not part of the editable mapping), so the hook goes there,
        # or lm_eval would find none of our models in an editable install.
        editable = getattr(self, "editable_mode", False)
        target = self.get_finalized_command("install").install_lib if editable else self.build_lib
        self.copy_file(str(Path(__file__).parent / PTH), str(Path(target) / PTH))


setup(cmdclass={"build_py": BuildWithPth})
