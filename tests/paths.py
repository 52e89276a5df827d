"""The repository's root, for the tests and their helpers (`from paths import REPO`): one
definition instead of a `Path(__file__).resolve().parents[...]` in every file, whose count of
parents changes when a file moves."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
