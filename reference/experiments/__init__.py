"""Runnable experiments from the handbook's chapters (`python -m reference.experiments.<name>`)."""
