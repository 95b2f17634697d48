"""Everything is declared in setup.cfg; this file only adds the lm-eval start-up hook.

setuptools has no declarative way to put a .pth file at the top of site-packages, which is
how adept-eval makes plain ``lm_eval --tasks adept_...`` work (see adept_eval/lm_eval_plugin.py).
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "adept_eval_lm_eval.pth"


class BuildWithPth(build_py):
    def run(self):
        super().run()
        self.copy_file(str(Path(__file__).parent / PTH), str(Path(self.build_lib) / PTH))


setup(cmdclass={"build_py": BuildWithPth})
