"""Issue 20 item 9: problem 143's page serves `prefix_cache.py`, which is problem 142's
reference (the handbook prints it in its prefix-caching chapter, so it cannot be kept secret).
The test fetches 142's answer from 143's API, as a student could, and checks that 142's
statements (both languages) and the instructors' documentation say so."""

from __future__ import annotations

from fastapi.testclient import TestClient
from paths import REPO

from judge.problem import load_problem
from web.app import create_app
from web.settings import Settings


def test_143s_page_serves_142s_answer_and_142_says_so(tmp_path):
    p142 = load_problem("142")
    reference = p142.reference_path.read_text(encoding="utf-8")
    with TestClient(create_app(Settings(data_dir=tmp_path / "data"), workers=0)) as c:
        served = c.get("/api/problems/143").json()["handbook"]
    assert served["prefix_cache"] == reference  # the attack: 142's answer, from 143's page
    en, zh = p142.statement("en"), p142.statement("zh")
    assert "This problem's answer is not secret." in en and "143" in en
    assert "prefix_cache.py" in en and "after its deadline" in en
    assert "这道题的答案不是秘密。" in zh and "prefix_cache.py" in zh and "截止之后" in zh
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "What the platform cannot keep secret." in readme
    assert "open 143 and 144 to the class only after 142's deadline" in readme
