# The two commands of the README. Each does its own set-up first (idempotent, fast when done).
.PHONY: run test setup experiment

# The platform on its embedded defaults: SQLite + an embedded queue and workers in ./data.
run: setup
	.venv/bin/judge serve $(ARGS)

test:
	scripts/setup.sh --test
	.venv/bin/python -m pytest -q --durations=25
	.venv/bin/judge check

experiment: setup
	.venv/bin/python -m reference.experiments.multi_turn

setup:
	scripts/setup.sh
