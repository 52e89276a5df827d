# The two commands of the README. Each does its own set-up first (idempotent, fast when done).
.PHONY: run test lint setup experiment

# What ruff checks (pyproject.toml's [tool.ruff]); mypy checks judge/ and web/ ([tool.mypy]).
LINTED = judge web tests practice reference benchmarks scripts

# The platform on its embedded defaults: SQLite + an embedded queue and workers in ./data.
run: setup
	.venv/bin/judge serve $(ARGS)

# (`judge check` of the bank is a test of the session, tests/authoring/test_bank_proves_itself.py,
# reading the gradings the warm and shard tests make: the bank is graded once per run)
test:
	scripts/setup.sh --test
	$(MAKE) --no-print-directory lint
	.venv/bin/python -m pytest -q --durations=25 -n 2

experiment: setup
	.venv/bin/python -m reference.experiments.multi_turn

setup:
	scripts/setup.sh

# Lint, import order and types; `make test` runs it first, and an error fails the target.
lint:
	.venv/bin/ruff check $(LINTED)
	.venv/bin/mypy judge web
