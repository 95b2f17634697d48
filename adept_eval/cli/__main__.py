"""``python -m adept_eval.cli``: the ``adept-eval`` command."""

import sys

from adept_eval.cli import main

sys.exit(main())
