"""Reports come only from judge.judging.report: the platform's own IE report has every field a graded
one has, and the reference cache keeps what it read in memory through its public API."""

import json
import os

from paths import REPO

from judge.grading.platform_error import platform_error_report
from judge.grading.reference_cache import ReferenceCache
from judge.judging.report import Report
from judge.judging.verdict import Verdict
from judge.problem import load_problem

LRU = REPO / "tests" / "fixtures" / "problems" / "001-lru-cache"


def test_a_platform_error_report_has_every_field_of_a_report():
    graded = Report(verdict=Verdict.AC, score=1.0, problem={}, submission={}).to_dict()
    d = platform_error_report(load_problem(LRU), "the worker must be updated").to_dict()
    assert set(d) == set(graded)
    assert d["verdict"] == "IE" and d["score"] == 0 and d["internal_error"] == "internal error"
    assert d["problem"]["version"] == load_problem(LRU).version
    ff = d["first_failure"]
    assert ff["message"] == "the worker must be updated" and ff["verdict"] == "IE"
    assert ff["test"] is None and ff["kind"] == "internal"
    assert d["provenance"]["judge_version"] and json.loads(json.dumps(d)) == d


def test_a_platform_error_report_without_a_problem():
    d = platform_error_report("777", "problem 777 is not in this worker's problem bank").to_dict()
    assert d["problem"] == {"id": "777", "slug": None, "version": None}
    assert "777" in d["first_failure"]["message"]


def test_the_in_memory_cache_reads_a_file_again_only_when_it_changes(tmp_path):
    problem = load_problem(LRU)
    writer, reader = ReferenceCache(tmp_path), ReferenceCache(tmp_path, in_memory=True)
    assert type(reader) is ReferenceCache and reader.load(problem, "cpu") == {}
    writer.store(problem, "cpu", {"public": {"tests": [1]}})
    assert reader.load(problem, "cpu") == {"public": {"tests": [1]}}
    path = writer.path(problem, "cpu")
    first = reader.load(problem, "cpu")
    assert reader.load(problem, "cpu") is first          # kept, not parsed again
    writer.store(problem, "cpu", {"public": {"tests": [2]}})
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert reader.load(problem, "cpu") == {"public": {"tests": [2]}}
