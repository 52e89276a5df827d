"""`python -m web ...` is the `judge` command (every verb, the web platform's included)."""

import sys

from web.cli import judge_main

sys.exit(judge_main())
