"""The ``adept-eval`` command is assembled from one module per command (``adept_eval.cli``)."""

import subprocess
import sys

from adept_eval import cli
from adept_eval.cli import build_parser

#: the commands in the order ``adept-eval --help`` lists them
ORDER = ["prepare", "manifest", "check", "questions", "make-synthetic", "ceiling", "report",
         "compare", "publish", "leaderboard", "judge-agreement", "agreement", "listening-test"]


def test_every_command_is_a_module_with_add_parser_and_run():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert list(commands) == ORDER
    for module in cli.COMMANDS:
        assert callable(module.add_parser), module.__name__
    for name in ORDER[:-1]:  # listening-test has subcommands, each with its own function
        module = getattr(cli, name.replace("-", "_"))
        assert parser.parse_args([name, *_required(name)]).func is module.run, name


def _required(name: str) -> list[str]:
    """Arguments a command cannot be parsed without."""
    return {"check": ["folder"], "make-synthetic": ["out"], "report": ["r"],
            "compare": ["a", "b"], "publish": ["r", "--repo", "x/y"],
            "judge-agreement": ["j", "h"], "agreement": ["p", "m"]}.get(name, [])


def test_python_m_runs_the_same_command():
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "{" + ",".join(ORDER) + "}" in done.stdout
