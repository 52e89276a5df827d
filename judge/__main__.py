"""`python -m judge ...`: the grading core's verbs of the `judge` command (grade, check, new, import,
list, doctor); `python -m web` (the console script) has the web platform's too."""

import sys

from judge.cli.main import main

sys.exit(main())
