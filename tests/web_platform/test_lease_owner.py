"""The lease owner of a running submission is one type (web.store.lease): what the claim writes,
the worker table, the `running` event and `graded_by` all read it the same way."""

from __future__ import annotations

import os

from web.store.db import Database, Submission, SubmissionEvent, Visitor
from web.store.lease import LeaseOwner, WorkerId


def test_owner_text_round_trips():
    worker = WorkerId("gpu-host.example", 4242, "slot-3")
    owner = LeaseOwner.new(worker)
    assert str(owner).startswith("gpu-host.example:4242:slot-3:") and len(owner.nonce) == 8
    back = LeaseOwner.parse(str(owner))
    assert back == owner and back.worker_id == worker
    # a thread name with a colon stays the slot; the nonce is always the last field
    odd = LeaseOwner.parse("h:12:grader:1:abcd1234")
    assert odd.nonce == "abcd1234" and odd.worker_id == WorkerId("h", 12, "grader:1")
    assert WorkerId.parse("h:notapid:x").pid is None
    assert LeaseOwner.new(worker) != owner  # each claim its own nonce


def test_claim_and_finish_name_the_worker_of_the_lease(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    db.create_all()
    with db.session() as s:
        v = Visitor(token_hash="x" * 64)
        s.add(v)
        s.flush()
        sub = Submission(visitor_id=v.id, problem_id="901", code="x", code_sha256="0" * 64)
        s.add(sub)
        s.commit()
        sid = sub.id
    worker = WorkerId("here", os.getpid(), "grader-1")
    owner = str(LeaseOwner.new(worker))
    assert db.claim(sid, owner, 60.0) is not None
    assert not db.finish(sid, str(LeaseOwner.new(worker)), {"verdict": "AC"}, 1)  # another nonce
    assert db.finish(sid, owner, {"verdict": "AC", "score": 1.0}, 1)
    with db.session() as s:
        running = [e.data for e in s.query(SubmissionEvent).filter_by(type="running")]
        assert running == [{"attempt": 1, "worker": str(worker)}]
        assert s.get(Submission, sid).graded_by == str(worker)
