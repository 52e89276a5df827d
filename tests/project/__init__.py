"""Tests of the project's own shape: rooms, import direction, requirements, set-up, benchmarks."""
