"""Issue 10, items 2 and 3, through grade(): what one run of a submission can do to the host and
to its other run.

- Covert channel: the hidden run created files to move the free-inode count of the disk both
  runs' scratch folders shared, and the public run printed what it sampled (6 of 6 bytes of the
  hidden test file decoded from the report here, ~70 bytes per submission in the issue). Now the
  public run ends before the hidden run starts, and each has a filesystem of its own.
- Disk fill: a public test wrote 1 GiB and 3,000 files to the host's disk in 5.1 s (2.9 GiB and
  200,000 files in the issue). Now the scratch folder holds 64 MiB in 10,000 files at most, and
  filling it is OLE, "disk quota".
"""

from __future__ import annotations

import pytest

from judge.judging.bounded import SCRATCH_FILES

from grading.test_grade_end_to_end import FIRST, REFERENCE, run

SIGNAL_AND_LISTEN = r'''
import os as _o, sys as _s, time as _t
_a = _s.argv
_side = _a[_a.index("--suite-dir") + 1].rsplit("/", 1)[-1] if "--suite-dir" in _a else ""
if _side == "hidden":  # spell bytes of the hidden tests as bursts of files
    _o.makedirs("sig", exist_ok=True)
    for _k in (3, 1, 4):
        for _i in range(40 * _k):
            open("sig/%d" % _i, "w").close()
        _t.sleep(0.15)
        for _i in range(40 * _k):
            _o.unlink("sig/%d" % _i)
        _t.sleep(0.1)
elif _side == "public":  # and listen for them
    _seen = set()
    _end = _t.time() + 1.5
    while _t.time() < _end:
        _seen.add(_o.statvfs(".").f_ffree)
        _t.sleep(0.005)
    print("FREE-INODES moved by %d of %d" % (max(_seen) - min(_seen), _o.statvfs(".").f_files))
'''

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)


def test_the_public_run_hears_nothing_from_the_hidden_run(problem, cache):
    events = []
    report, d = run(problem, cache, REFERENCE + SIGNAL_AND_LISTEN, on_event=events.append)
    assert d["verdict"] == "AC", report.ie_cause
    out = d["output"] or ""
    assert f"FREE-INODES moved by 0 of {SCRATCH_FILES + 1}" in out, out
    # nothing of the hidden run happened while the public one ran
    kinds = [(e["type"], e.get("suite") or e.get("test", "").split("/")[0]) for e in events
             if e["type"] in ("test_started", "test_finished", "suite_finished")]
    public_done = kinds.index(("suite_finished", "public"))
    assert all(where != "hidden" for _, where in kinds[:public_done])
    assert d["provenance"]["sandbox_layers"]["run_fs"] is True


FILL = r'''
import os as _o
def _fill(self, key):
    chunk = b"x" * (1 << 20)
    for i in range(200):
        with open("big%d" % i, "wb") as f:
            for _ in range(16):
                f.write(chunk)
LRUCache.get = _fill
'''


def test_filling_the_scratch_folder_is_ole_disk_quota(problem, cache):
    report, d = run(problem, cache, REFERENCE + FILL, suite="public", select=FIRST)
    ff = d["first_failure"]
    assert d["verdict"] == "OLE" and ff["kind"] == "disk", (ff, report.ie_cause)
    assert "disk quota" in ff["message"] and "64 MiB" in ff["message"]
    # A hidden run that fills its disk shows what every hidden failure shows (judging/concealed.py:
    # which way a hidden test failed is a channel the submission steers); the kind is logged.
    _, d = run(problem, cache, REFERENCE + FILL, suite="hidden")
    assert d["verdict"] == "WA"
    assert d["first_failure"]["kind"] == "failed" and "message" not in d["first_failure"]


def test_many_small_files_are_ole_too(problem, cache):
    source = REFERENCE + r'''
def _many(self, key):
    import os
    os.makedirs("many", exist_ok=True)
    for i in range(50_000):
        open("many/%d" % i, "w").close()
LRUCache.get = _many
'''
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "OLE" and "disk quota" in d["first_failure"]["message"]
