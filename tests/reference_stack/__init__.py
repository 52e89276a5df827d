"""Tests of the handbook's inference stack under reference/ (Qwen3, engine, pools)."""
