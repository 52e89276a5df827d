"""Tests of the sandbox: isolation, limits, what one run can see of another."""
