"""C++ problems graded in the sandbox (judge/grading/cpp/, docs/IMPORTED_GRADING.md "C++
problems"): the reference AC, the starter and one-line mutants not, a compile error and a
sanitizer report at the student's own line, the example cases public and the others
concealed, limits, and the compile cache. Fixtures: tests/fixtures/handbook_cpp, problems of
our own in the handbook's format."""

from __future__ import annotations

import pytest
from cpp_bank import cpp_bank, line_of, mutant, source

from judge import grade
from judge.grading.cpp import toolchain

pytestmark = [pytest.mark.usefixtures("run_cache"),
              pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                                 reason="no C++ compiler with AddressSanitizer here")]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return cpp_bank(tmp_path_factory)


def verdicts(report) -> dict[str, str]:
    return {t.name.split("::")[1]: str(t.verdict) for t in report.tests}


def first(report) -> dict:
    return report.to_dict()["first_failure"] or {}


def test_reference_is_accepted_and_the_starter_is_not(bank):
    lru = bank["lru-cache"]
    assert grade(lru, source("lru-cache")).verdict == "AC"
    r = grade(lru, source("lru-cache", "starter.cpp"))
    assert r.verdict == "WA" and 0 < r.score < 1
    assert verdicts(r) == {"example_basic": "AC", "example_evict": "WA",
                           "update_keeps_size": "AC", "zero_capacity": "WA",
                           "random_against_oracle": "WA", "secret_sequence": "WA",
                           "table_after_mix": "WA"}


def test_example_cases_are_public_the_others_concealed(bank):
    d = grade(bank["lru-cache"], source("lru-cache", "starter.cpp")).to_dict()
    tests = {t["name"]: t for t in d["tests"]}
    evict = tests["public/test.cpp::example_evict"]["failure"]
    assert (evict["label"], evict["expected"], evict["got"]) == (
        "get(2) after it was evicted", "-1", "20")
    hidden = tests["hidden/test.cpp::secret_sequence"]
    assert hidden["verdict"] == "WA" and hidden["failure"] == {
        "kind": "failed", "label": None, "exc_type": None, "line": None}
    assert d["output"] is None  # the binary holds every case's code: its output is not shown
    assert "[96, -1" not in str(d)  # the hidden case's expected value is nowhere in it


def test_run_grades_the_examples_only(bank):
    lru = bank["lru-cache"]
    examples = [t.name for t in lru.examples()]
    assert examples == ["public/test.cpp::example_basic", "public/test.cpp::example_evict"]
    r = grade(lru, source("lru-cache", "starter.cpp"), suite="public", select=examples)
    assert verdicts(r) == {"example_basic": "AC", "example_evict": "WA"}
    assert "test.cpp" not in " ".join(lru.public_files())  # the test file is never served


def test_one_line_mutants_are_rejected(bank):
    lru = bank["lru-cache"]
    wrong = mutant("lru-cache", "if (int(order_.size()) == capacity_) {",
                   "if (int(order_.size()) > capacity_) {")
    r = grade(lru, wrong)
    assert r.verdict == "WA" and verdicts(r)["example_evict"] == "WA"
    no_throw = mutant("lru-cache", 'if (capacity <= 0) throw std::invalid_argument("capacity '
                      'must be positive");', "")
    assert verdicts(grade(lru, no_throw))["zero_capacity"] == "WA"


def test_a_compile_error_is_at_the_students_line(bank):
    lru = bank["lru-cache"]
    text = source("lru-cache").replace("int size() const {", "int size() const { oops;")
    r = grade(lru, text)
    ce = r.to_dict()["compile_error"]
    assert r.verdict == "CE" and ce["line"] == line_of(text, "oops;")
    assert "'oops' was not declared" in ce["message"] and "user.cpp" in ce["message"]
    assert "test" not in ce["traceback"]
    # the student's file compiles, the test's call of it does not: the compiler's sentence only
    renamed = source("lru-cache").replace("int get(int key)", "int lookup(int key)")
    ce = grade(lru, renamed).to_dict()["compile_error"]
    assert ce["line"] is None and "get" in ce["message"] and "pj::run" not in ce["message"]
    undefined = source("lru-cache").replace("int size() const { return int(order_.size()); }",
                                            "int size() const;")
    ce = grade(lru, undefined).to_dict()["compile_error"]
    assert "undefined reference to LruCache::size() const" in ce["message"]


def test_a_leak_is_RE_at_the_allocation(bank):
    buf = bank["owned-buffer"]
    assert grade(buf, source("owned-buffer")).verdict == "AC"
    starter = source("owned-buffer", "starter.cpp")
    r = grade(buf, starter)
    assert r.verdict == "RE", verdicts(r)
    msg = first(r)["message"]
    assert msg.startswith("LeakSanitizer: memory leak (user.cpp, line "
                          f"{line_of(starter, 'new int[n]()')}"), msg


def test_use_after_free_and_double_free_are_RE_at_the_students_line(bank):
    buf = bank["owned-buffer"]
    double = mutant("owned-buffer", "    o.data_ = nullptr;\n", "")
    r = grade(buf, double)
    assert verdicts(r)["move_leaves_source_empty"] == "RE"
    failure = {t.name: t.failure for t in r.tests}["hidden/test.cpp::move_leaves_source_empty"]
    assert failure.hidden and r.to_dict()["tests"][2]["failure"]["kind"] == "failed"
    revealed = grade(buf, double, reveal_hidden=True)  # judge check sees what it was
    msg = {t.name: t.failure for t in revealed.tests}[
        "hidden/test.cpp::move_leaves_source_empty"].message
    assert msg.startswith("AddressSanitizer: attempting double-free (user.cpp, line "
                          f"{line_of(double, 'delete[] data_')}"), msg


def test_undefined_behaviour_is_RE_at_the_students_line(bank):
    overflow = mutant("owned-buffer", "    long long s = 0;\n    for (size_t i = 0; i < n_; ++i)"
                      " s += data_[i];", "    int s = 0;\n    for (size_t i = 0; i < n_; ++i)"
                      " s += data_[i];")
    r = grade(bank["owned-buffer"], overflow, reveal_hidden=True)
    assert verdicts(r)["large_values"] == "RE" and verdicts(r)["example_fill_and_sum"] == "AC"
    msg = {t.name.split("::")[1]: t.failure for t in r.tests}["large_values"].message
    assert msg.startswith("UndefinedBehaviorSanitizer: signed integer overflow") and \
        f"user.cpp, line {line_of(overflow, 's += data_[i]')}" in msg, msg


def test_a_data_race_is_RE_under_thread_sanitizer(bank):
    counter = bank["shared-counter"]
    assert counter.config.native.sanitize == "thread"
    assert grade(counter, source("shared-counter")).verdict == "AC"
    starter = source("shared-counter", "starter.cpp")
    r = grade(counter, starter, reveal_hidden=True)
    assert verdicts(r) == {"example_one_thread": "AC", "four_threads": "RE"}
    msg = r.tests[1].failure.message
    assert msg.startswith("ThreadSanitizer: data race (user.cpp, line "
                          f"{line_of(starter, 'total_ += k')}"), msg


def test_a_case_past_its_cpu_time_is_TLE_and_the_others_still_run(bank):
    spin = mutant("lru-cache", "  int size() const { return int(order_.size()); }",
                  "  int size() const { if (capacity_ == 3) for (;;) {} "
                  "return int(order_.size()); }")
    r = grade(bank["lru-cache"], spin, reveal_hidden=True)
    v = verdicts(r)
    assert v["update_keeps_size"] == "TLE" and v["random_against_oracle"] == "AC"
    assert v["secret_sequence"] == "AC"  # each case has a process of its own


def test_memory_is_the_cgroups_limit(bank):
    hog = mutant("lru-cache", "  int size() const { return int(order_.size()); }",
                 "  int size() const { if (capacity_ == 3) { auto* p = new char[size_t(4) << 30];"
                 " for (size_t i = 0; i < (size_t(4) << 30); i += 4096) p[i] = 1; "
                 "return p[7]; } return int(order_.size()); }")
    r = grade(bank["lru-cache"], hog, reveal_hidden=True)
    assert verdicts(r)["update_keeps_size"] in ("MLE", "RE"), verdicts(r)
    assert verdicts(r)["random_against_oracle"] == "AC"


def test_compiles_are_cached_per_submission_and_problem_version(bank):
    lru = bank["lru-cache"]
    text = source("lru-cache") + "\n// a comment of its own\n"
    first_time = grade(lru, text).timings
    again = grade(lru, text).timings
    assert first_time["compile_cached"] is False and again["compile_cached"] is True
    assert again["compile_s"] < first_time["compile_s"]


def test_the_cuda_half_gives_no_false_verdict_without_a_gpu(bank, monkeypatch):
    """Where the CPU emulator cannot model a file (tests/grading/test_cuda_grading.py grades
    the ones it can), a worker without a GPU gives no verdict."""
    from judge.grading.cpp import cuda

    cu = bank["vec-scale-cuda"]
    assert cu.language == "cuda" and cu.native_test_path.name == "test.cu"
    monkeypatch.setattr(cuda, "gpu_toolchain", lambda: None)
    r = grade(cu, "#include <cooperative_groups.h>\n" + source("vec-scale-cuda", "solution.cu"))
    d = r.to_dict()
    assert d["verdict"] == "IE" and d["tests"] == []
    assert "GPU worker" in d["first_failure"]["message"]
    python_half = bank["vec-scale"]
    assert python_half.language == "python"
    assert grade(python_half, source("vec-scale", "solution.py")).verdict == "AC"


def test_clang_grades_alike(bank, monkeypatch):
    """With clang++ as the compiler (setup installs both): the same verdicts and lines."""
    tc = toolchain.find()
    clang = next((c for c in tc.compilers if c.name == "clang++"), None)
    if clang is None or "address,undefined" not in clang.sanitizers or \
            "thread" not in clang.sanitizers:
        pytest.skip("no clang++ with the sanitizers here")
    monkeypatch.setattr(toolchain, "find", lambda refresh=False: toolchain.Toolchain(
        [clang], tc.addr2line, tc.strip, tc.nvcc))
    lru, buf, counter = bank["lru-cache"], bank["owned-buffer"], bank["shared-counter"]
    assert grade(lru, source("lru-cache")).verdict == "AC"
    r = grade(lru, source("lru-cache", "starter.cpp"))
    assert r.provenance["compiler"].startswith("Debian clang") or "clang" in \
        r.provenance["compiler"]
    assert verdicts(r)["example_evict"] == "WA" and r.verdict == "WA"
    starter = source("owned-buffer", "starter.cpp")
    assert first(grade(buf, starter))["message"].startswith(
        f"LeakSanitizer: memory leak (user.cpp, line {line_of(starter, 'new int[n]()')}")
    racy = source("shared-counter", "starter.cpp")
    r = grade(counter, racy, reveal_hidden=True)
    assert r.tests[1].failure.message.startswith(
        f"ThreadSanitizer: data race (user.cpp, line {line_of(racy, 'total_ += k')}")


def test_doctor_lists_the_compilers_and_sanitizers(capsys):
    import json

    from judge.cli.main import main as judge_main

    assert judge_main(["doctor", "--json"]) == 0
    rows = {r["name"]: r["found"] for r in json.loads(capsys.readouterr().out)["compilers"]}
    assert rows["g++"] and "clang++" in rows and rows["addr2line"]
    assert rows["g++ -fsanitize=address,undefined"] and rows["g++ -fsanitize=thread"]
    assert judge_main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "C++ compilers and sanitizers:" in out and "ok g++ -fsanitize=thread" in out
