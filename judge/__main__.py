"""`python -m judge ...` is the `judge` command."""

import sys

from .cli import main

sys.exit(main())
