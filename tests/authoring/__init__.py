"""Tests of judge check, mutation testing, judge import of the handbook's problems."""
