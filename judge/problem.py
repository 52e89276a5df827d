"""The problem model's public names, in one place:

- `problem_config`: `problem.toml`'s schema, `ProblemError`;
- `problem_folder`: `Problem` (one folder: files, tests, version), `TestInfo`;
- `problem_bank`: `ProblemBank`, `load_problem`, `list_problems`.
"""

from __future__ import annotations

from .problem_bank import ProblemBank, list_problems, load_problem, problems_root
from .problem_config import (LANGS, CheckConfig, HandbookConfig, LimitsConfig, ProblemConfig,
                             ProblemError, ReferenceConfig, SourceConfig, SubmissionConfig,
                             Title, parse_config)
from .problem_folder import REPO_ROOT, SUITES, Problem, TestInfo, discover_file

__all__ = ["ProblemBank", "list_problems", "load_problem", "problems_root", "LANGS",
           "CheckConfig", "HandbookConfig", "LimitsConfig", "ProblemConfig", "ProblemError",
           "ReferenceConfig", "SourceConfig", "SubmissionConfig", "Title", "parse_config",
           "REPO_ROOT", "SUITES", "Problem", "TestInfo", "discover_file"]
