"""The problem model's public names, in one place:

- `config`: `problem.toml`'s schema, `ProblemError`;
- `folder`: `Problem` (one folder: files, tests, version), `TestInfo`;
- `bank`: `ProblemBank`, `load_problem`, `list_problems`.
"""

from __future__ import annotations

from judge.problem.bank import ProblemBank, list_problems, load_problem, problems_root
from judge.problem.config import (
                             LANGS,
                             CheckConfig,
                             HandbookConfig,
                             LimitsConfig,
                             ProblemConfig,
                             ProblemError,
                             ReferenceConfig,
                             SourceConfig,
                             SubmissionConfig,
                             Title,
                             parse_config,
)
from judge.problem.folder import REPO_ROOT, SUITES, Problem, TestInfo, discover_file

__all__ = ["ProblemBank", "list_problems", "load_problem", "problems_root", "LANGS",
           "CheckConfig", "HandbookConfig", "LimitsConfig", "ProblemConfig", "ProblemError",
           "ReferenceConfig", "SourceConfig", "SubmissionConfig", "Title", "parse_config",
           "REPO_ROOT", "SUITES", "Problem", "TestInfo", "discover_file"]
