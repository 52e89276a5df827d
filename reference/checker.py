"""The handbook's test helpers, as the flat module `checker` that imported tests import
(`from checker import check, ...`). They live with the runner (judge/runner/checker.py); this
file is what a bank's `reference/` folder mounts for them."""

try:
    from judge_runner.checker import *  # noqa: F401,F403  (inside a sandbox or the page)
    from judge_runner.checker import __all__  # noqa: F401
except ImportError:
    from judge.runner.checker import *  # noqa: F401,F403
    from judge.runner.checker import __all__  # noqa: F401
