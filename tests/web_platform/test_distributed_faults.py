"""Faults in distributed mode, on loopback with real PostgreSQL and Redis: a worker killed with
SIGKILL mid-job, the web server restarted in the middle of a burst, Redis restarted (its data
lost), a worker cut off from Redis. Nothing accepted is lost; every report is recorded once.
The graders are stand-ins (tests/distributed_graders.py): these tests are about the queue."""

from __future__ import annotations

import re
import signal
import threading
import time

from distributed_support import Student, Worker, all_done, done_event_counts, rows, wait_for

PACED = "tests.distributed_graders:paced"


def _events(db_url: str, sid: int) -> list[str]:
    from sqlalchemy import select

    from web.store.db import Database, SubmissionEvent
    db = Database(db_url)
    with db.session() as s:
        out = [e.type for e in s.scalars(select(SubmissionEvent).where(
            SubmissionEvent.submission_id == sid).order_by(SubmissionEvent.id))]
    db.engine.dispose()
    return out


def test_worker_killed_mid_job_is_regraded_by_another_once(tmp_path, server, pg_url,
                                                           redis_srv):
    marker = tmp_path / "hang-started"
    doomed = Worker(tmp_path, redis_srv.url(), server.url, grader="tests.distributed_graders:hang",
                    env={"KVP_HANG_MARKER": str(marker)}, name="doomed")
    student = Student(server.url, 1)
    sid = student.submit("901", "x = 1")["id"]
    other = None
    try:
        wait_for(marker.exists, 60, "the first worker to start grading")
        r = rows(pg_url)[sid]
        assert r.status == "running" and r.lease_owner.split(":")[1] == str(doomed.pid)
        time.sleep(4)  # longer than the lease: the heartbeat keeps it
        assert rows(pg_url)[sid].status == "running"
        other = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="other")
        doomed.proc.send_signal(signal.SIGKILL)
        doomed.proc.wait(10)
        wait_for(lambda: all_done(pg_url, [sid]), 60, "the submission to be graded again")
    finally:
        doomed.stop()
        if other is not None:
            other.stop()
    r = rows(pg_url)[sid]
    assert r.verdict == "AC" and r.attempts == 2
    assert r.graded_by.split(":")[1] == str(other.pid)
    assert done_event_counts(pg_url) == {sid: 1}
    kinds = _events(pg_url, sid)
    assert kinds.count("running") == 2 and "requeued" in kinds and kinds[-1] == "done"
    assert student.get(sid)["report"]["provenance"]["worker"].split(":")[1] == str(other.pid)


def test_server_restarted_mid_burst_grades_every_accepted_submission(tmp_path, server, pg_url,
                                                                    redis_srv):
    workers = [Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name=f"w{i}",
                      env={"KVP_PACE_S": "0.3"}) for i in range(2)]
    students = [Student(server.url, i) for i in range(24)]
    accepted: dict[int, str] = {}

    def burst():
        for i, st in enumerate(students):
            code = f"x = {i}" + ("  # BUG" if i % 3 == 0 else "")
            ans = st.submit("901", code, retry_s=60)
            assert ans is not None, "the server did not come back"
            accepted[ans["id"]] = "WA" if i % 3 == 0 else "AC"
            time.sleep(0.05)

    t = threading.Thread(target=burst)
    try:
        t.start()
        wait_for(lambda: len(accepted) >= 8, 60, "a third of the burst")
        server.kill(signal.SIGKILL)  # mid-burst, mid-grading
        time.sleep(1.0)
        server.start()
        t.join(120)
        assert not t.is_alive() and len(accepted) == len(students)
        wait_for(lambda: all_done(pg_url, accepted), 120, "every accepted submission")
    finally:
        t.join(5)
        for w in workers:
            w.stop()
    r = rows(pg_url)
    assert {i: r[i].verdict for i in accepted} == accepted
    # Nothing the server stored is left behind (a 202 lost in the kill is stored all the same).
    assert all(x.status == "done" for x in r.values())
    assert done_event_counts(pg_url) == {i: 1 for i in r}
    assert server.starts == 2


DOWN = "the grading queue (redis) does not answer"
AGAIN = "the grading queue answers again; 8 submission(s) queued again"


def test_redis_restarted_loses_nothing_accepted(tmp_path, server, pg_url, redis_srv):
    students = [Student(server.url, i) for i in range(8)]
    first = [st.submit("901", f"x = {i}")["id"] for i, st in enumerate(students[:5])]
    redis_srv.stop()  # the queue and its 5 tasks are gone
    # Accepted while Redis is down: stored in the database, queued later.
    during = [st.submit("901", "y = 1")["id"] for st in students[5:]]
    # The server's reconciliation finds the queue down (the event, not a time, is waited for).
    wait_for(lambda: DOWN in server.log(), 60, "the server to notice the queue is down")
    redis_srv.start()  # empty
    worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED,
                    env={"KVP_PACE_S": "0.05"})
    try:
        wait_for(lambda: all_done(pg_url, first + during), 60, "every accepted submission")
    finally:
        worker.stop()
    assert done_event_counts(pg_url) == {i: 1 for i in first + during}
    wait_for(lambda: AGAIN in server.log(), 60, "the server to say the queue answers again")
    log = server.log()
    assert DOWN in log and log.index(DOWN) < log.index(AGAIN), log[-4000:]


def test_worker_cut_off_from_redis_reconnects_with_backoff(tmp_path, server, pg_url,
                                                          redis_srv):
    worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED,
                    env={"KVP_PACE_S": "0.05"})
    student = Student(server.url, 1)
    try:
        a = student.submit("901", "x = 1")["id"]
        wait_for(lambda: all_done(pg_url, [a]), 60, "the first verdict")
        redis_srv.stop()
        wait_for(lambda: len(re.findall(r"reconnecting to the queue in", worker.log())) >= 4,
                 60, "the worker to back off a few times")
        state = server.instructor("GET", "/api/instructor/workers").json()["workers"]
        assert [w["status"] for w in state if w["kind"] == "remote"] == ["queue-down"]
        b = student.submit("901", "x = 2")["id"]  # accepted meanwhile
        redis_srv.start()
        c = student.submit("901", "x = 3")["id"]
        wait_for(lambda: all_done(pg_url, [b, c]), 90, "the verdicts after the outage")
    finally:
        worker.stop()
    log = worker.log()
    waits = [float(x) for x in re.findall(r"reconnecting to the queue in ([\d.]+) s", log)]
    assert len(waits) >= 4 and waits[3] > 2 * waits[0], waits  # the waits grow
    assert "the queue answers again; reconnected" in log
    assert worker.proc.returncode == 0  # the same process throughout, stopped cleanly
    r = rows(pg_url)
    assert {r[i].graded_by.split(":")[1] for i in (a, b, c)} == {str(worker.pid)}
