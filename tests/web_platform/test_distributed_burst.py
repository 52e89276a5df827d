"""A 10-submission burst graded by the real judge on two remote workers (real PostgreSQL and
Redis on loopback): accepted, wrong-answer and never-finishing files of problem 143 from 10
students, sent at once, so that both workers take part and jobs wait in the queue
(benchmarks/load.py sends 200; this test sent 20 until the suite had to fit a busy CI machine:
the workers' gradings were about half its 172 CPU s). Nothing is lost or duplicated, and every verdict (and
every test's result) equals what the local judge gives for the same file. Problem 143's time
floor is lowered to 2 s here so that the never-finishing files are TLE quickly."""

from __future__ import annotations

import time

import pytest
from burst_support import burst, local_verdicts, mix, outcome, problem_copy, wait_graded
from distributed_support import RedisServer, Server, Worker, postgres

pytestmark = pytest.mark.slow


def test_burst_of_10_nothing_lost_verdicts_match_the_local_judge(tmp_path):
    pytest.importorskip("torch")
    problems, reference = problem_copy(tmp_path, min_test_s=2.0)
    items = mix(10)
    expected = local_verdicts(problems, [src for _, src in items])
    assert {v["verdict"] for v in expected.values()} == {"AC", "WA", "TLE"}

    pg_url = postgres().new_database()
    redis = RedisServer()
    # Leases long enough for a real grading on a loaded 2-core machine (the heartbeat renews).
    server = Server(tmp_path, pg_url, redis.url(), problems=problems, reference=reference,
                    timings={"lease_s": 30.0, "heartbeat_s": 2.0})
    workers = [Worker(tmp_path, redis.url(), server.url, problems=problems,
                      reference=reference, name=f"worker{i}") for i in range(2)]
    try:
        t0 = time.monotonic()
        accepted = burst(server.url, items, students=10)
        t1 = time.monotonic()
        assert len(accepted) == 10
        finished = wait_graded(pg_url, accepted, timeout=300)
        res = outcome(pg_url, accepted, expected, t0, t1, stuck_after_s=300)
    finally:
        for w in workers:
            w.stop()
        server.kill()
        redis.stop()
    print(res)
    assert finished, res
    assert (res["lost"], res["stuck"], res["duplicated"]) == (0, 0, 0), res
    assert res["mismatched"] == [], res
    assert res["verdicts"] == {"AC": 4, "TLE": 2, "WA": 4}
    assert res["devices"] == ["cpu"]
    logs = [w.log() for w in workers]
    assert all("reference stack warm on cpu" in log for log in logs), logs[0][-2000:]
    assert all("submission" in log and "stored" in log for log in logs)  # both took part
