# The two commands of the README. Each does its own set-up first (idempotent, fast when done).
.PHONY: run test setup experiment

run: setup
	.venv/bin/python -m reference.experiments.multi_turn

experiment: setup
	.venv/bin/python -m reference.experiments.multi_turn

test:
	scripts/setup.sh --test
	.venv/bin/python -m pytest -q
	@if [ -f judge/check.py ]; then .venv/bin/judge check; fi

setup:
	scripts/setup.sh
