"""Tests of the problem model: problem.toml, folders, the bank."""
