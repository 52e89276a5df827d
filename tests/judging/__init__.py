"""Tests of the judging kernel: comparison, verdicts, the per-suite loop, hints, the words."""
