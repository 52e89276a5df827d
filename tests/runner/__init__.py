"""Tests of the runner (judge/runner/): the call proxy's crossing of values, types, calls and
capabilities, and the in-sandbox pytest runner."""
