"""JUDGE_PREWARM (judge/config.py): `judge serve` starts its bank's zygotes at start-up
(warm_pool.prewarm) unless it is "0"; each zygote then starts on its problem's first grading."""

from __future__ import annotations

from judge.config import settings
from judge.grading import warm_pool


def test_prewarm_is_on_unless_judge_prewarm_is_zero(monkeypatch):
    monkeypatch.delenv("JUDGE_PREWARM", raising=False)
    assert settings().prewarm is True
    for value, on in (("1", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("JUDGE_PREWARM", value)
        assert settings().prewarm is on, value


def test_judge_prewarm_zero_starts_no_zygote(monkeypatch, problem):
    monkeypatch.setenv("JUDGE_PREWARM", "0")
    started = []
    monkeypatch.setattr(warm_pool, "server_for", lambda p: started.append(p))
    monkeypatch.setattr(warm_pool, "warm_possible", lambda: (True, ""))
    with warm_pool.forced(True):  # a warm process, where the zygote could start
        assert warm_pool.prewarm([problem]) is None
        monkeypatch.setenv("JUDGE_PREWARM", "1")  # and where it may, it does
        t = warm_pool.prewarm([problem])
        assert t is not None
        t.join(10)
    assert started == [problem]
