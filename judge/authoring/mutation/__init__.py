"""`judge check --mutate`: mutants of a reference solution graded with its problem's tests (gate.py)."""
