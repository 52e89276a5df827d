"""`judge regrade` in distributed mode (real PostgreSQL and Redis): every student's latest
submission is graded again at low priority; the per-student verdict diff waits for an
instructor, and students see the new results only once it is approved."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
from distributed_support import (
    INSTRUCTOR_TOKEN,
    REPO,
    Server,
    Student,
    Worker,
    all_done,
    instructor_cookies,
    rows,
    wait_for,
)

PACED = "tests.distributed_graders:paced"


def _regrade(*args):
    return subprocess.run([sys.executable, "-m", "web", "regrade", "901", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
                               "KVPRACTICE_INSTRUCTOR_TOKEN": INSTRUCTOR_TOKEN})


def test_regrade_diff_reviewed_before_students_see_it(tmp_path, pg_url, redis_srv):
    server = Server(tmp_path, pg_url, redis_srv.url())
    lenient = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="lenient",
                     env={"KVP_PACE_S": "0.05"})
    try:
        students = [Student(server.url, i) for i in range(4)]
        # Student 0 submits twice: only the latest submission is regraded.
        first = students[0].submit("901", "x = 0  # BUG")["id"]
        wait_for(lambda: all_done(pg_url, [first]), 60, "the first verdict")
        codes = ["x = 1  # EDGE", "x = 2", "x = 3  # BUG", "x = 4  # EDGE"]
        latest = [st.submit("901", c)["id"] for st, c in zip(students, codes)]
        wait_for(lambda: all_done(pg_url, latest), 60, "the verdicts")
        assert [st.get(i)["verdict"] for st, i in zip(students, latest)] == ["AC", "AC", "WA",
                                                                             "AC"]
        lenient.stop()
        # The tests got stricter ("EDGE" now fails): regrade through the server's API.
        strict = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="strict",
                        env={"KVP_PACE_S": "0.05", "KVP_STRICT": "1"})
        res = _regrade("--server", server.url)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "4/4 graded; 2 changed (AC->WA: 2, same: 2)" in res.stdout
        assert res.stdout.count("AC->WA") == 3  # two rows and the summary
        assert "Students still see their old results" in res.stdout

        # Pending review: students still see their old verdicts; the page shows the diff.
        assert [st.get(i)["verdict"] for st, i in zip(students, latest)] == ["AC", "AC", "WA",
                                                                             "AC"]
        (rg,) = server.instructor("GET", "/api/instructor/regrades").json()["regrades"]
        assert rg["state"] == "ready" and rg["changes"] == {"AC->WA": 2, "same": 2}
        assert [it["submission"] for it in rg["items"]] == latest
        assert {it["submission"]: it["change"] for it in rg["items"]} == {
            latest[0]: "AC->WA", latest[1]: "same", latest[2]: "same", latest[3]: "AC->WA"}
        page = httpx.get(server.url + "/instructor",
                         cookies=instructor_cookies(server)).text
        assert f"Regrade #{rg['id']}" in page and "approve: show the new results" in page
        # A second regrade of the same problem waits for this one's decision.
        assert server.instructor("POST", "/api/instructor/regrades",
                                 json={"problem": "901"}).status_code == 409

        # Approved (the page's form): the students see the new results.
        r = httpx.post(f"{server.url}/instructor/regrades/{rg['id']}/approve",
                       cookies=instructor_cookies(server), follow_redirects=False,
                       headers={"Origin": server.url})  # as the browser sends it
        assert r.status_code == 303
        assert [st.get(i)["verdict"] for st, i in zip(students, latest)] == ["WA", "AC", "WA",
                                                                             "WA"]
        assert students[0].get(first)["verdict"] == "WA"  # the older one is left alone
        assert server.instructor("POST", f"/api/instructor/regrades/{rg['id']}/approve"
                                 ).status_code == 409

        # Straight through the database (no server API): nothing changes any more; discarded.
        res = _regrade("--db", pg_url, "--json", "--problems", str(server.problems))
        assert res.returncode == 0, res.stdout + res.stderr
        data = json.loads(res.stdout[res.stdout.index("{"):])
        assert data["changes"] == {"same": 4} and data["state"] == "ready"
        out = server.instructor("POST", f"/api/instructor/regrades/{data['id']}/discard").json()
        assert out["status"] == "discarded"
        strict.stop()
    finally:
        server.kill()
        lenient.stop()
    kinds = [r.kind for r in rows(pg_url).values()]
    assert kinds.count("regrade") == 8 and kinds.count("live") == 5
