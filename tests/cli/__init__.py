"""Tests of the judge command and practice/judge.py."""
