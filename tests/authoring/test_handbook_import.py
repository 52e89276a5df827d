"""`judge import`: problems in the handbook's own format (tests/fixtures/handbook_problems, written
for these tests) become problems of a bank, are proven by `judge check`, and are graded locally,
on the web and by a remote worker; the explanation waits for an AC."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import reference  # noqa: F401  (puts the handbook modules, `checker` among them, on sys.path)
from judge import check_problem, grade, load_problem
from judge.authoring.handbook_format import FrontMatterError, parse_front_matter, split_tests
from judge.cli.main import main as judge_main
from judge.grading import warm_pool

HANDBOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_problems"
RUNNING_MAX = HANDBOOK / "basics" / "running-max"
EXPLANATION_WORDS = "每个下标最多入队、出队各一次"
# Linear, but it misses the last window: wrong on every example and most hidden tests.
WRONG = '''from collections import deque


def window_max(xs, k):
    if not 1 <= k <= len(xs):
        raise ValueError("bad k")
    out, window = [], deque()
    for i, x in enumerate(xs[:-1]):
        while window and xs[window[-1]] <= x:
            window.pop()
        window.append(i)
        if window[0] <= i - k:
            window.popleft()
        if i >= k - 1:
            out.append(xs[window[0]])
    return out
'''

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> Path:
    """Every fixture imported once into <tmp>/problems (read-only for the tests using it).
    Unchecked: the judge check tests below prove its two problems, and test_check_command.py
    proves an import's default check (a checked import here graded each problem twice)."""
    root = tmp_path_factory.mktemp("bank")
    assert judge_main(["import", str(HANDBOOK), "--problems", str(root / "problems"),
                       "--no-check"]) == 1
    return root / "problems"


def solution_source() -> str:
    return (RUNNING_MAX / "solution.py").read_text(encoding="utf-8")


# ---- the format ---------------------------------------------------------------------------

def test_front_matter_simple_forms():
    meta, body = parse_front_matter('---\ntitle: 注意力: 入门\n# a comment\ntags: [a, "b, c"]\n'
                                    "difficulty: '中等'  \nchapter: 3 # third\nrequires: []\n"
                                    "---\ntext\n")
    assert meta == {"title": "注意力: 入门", "tags": ["a", "b, c"], "difficulty": "中等",
                    "chapter": "3", "requires": []}
    assert body == "text"


@pytest.mark.parametrize("text, words", [
    ("title: x\n---\n", "line 1"),
    ("---\ntitle: x\n", "never closed"),
    ("---\ntags:\n  - a\n---\n", "no value"),
    ("---\ntitle: x\ntitle: y\n---\n", "twice"),
    ("---\njust words\n---\n", "key: value"),
    ("---\ntags: [a, [b]]\n---\n", "nested"),
    ("---\ntitle: \"open\n---\n", "not closed"),
])
def test_front_matter_refuses_what_it_does_not_understand(text, words):
    with pytest.raises(FrontMatterError, match=words):
        parse_front_matter(text)


def test_split_keeps_helpers_and_hides_the_other_tests():
    source = (RUNNING_MAX / "test.py").read_text(encoding="utf-8")
    split = split_tests(source)
    public, hidden = split.public, split.hidden
    for text in (public, hidden):
        assert "from solution import window_max" in text
    # brute_force is what only the hidden tests compare against: an answer key, kept hidden
    assert "def brute_force" in hidden and "def brute_force" not in public
    assert split.hidden_helpers == ["brute_force"]
    assert "def test_example_statement" in public and "def test_whole_list" not in public
    # a hidden test's comment and body never reach the public file
    assert "one window covering the whole list" not in public and "195_001" not in public
    assert "def test_example" not in hidden and "def test_random_lists" in hidden
    compile(public, "public", "exec"), compile(hidden, "hidden", "exec")


# ---- the checker helpers, outside the judge -----------------------------------------------

def test_checker_explains_mismatches():
    """The handbook's words (tests/grading/test_imported_grading.py has every signature)."""
    import checker

    checker.check([1, [2, 3]], [1, [2, 3]])
    with pytest.raises(AssertionError, match=r"结果（第一个不同在 \[1\]\[0\]）\n  期望：\[1, \[2, 3\]\]"):
        checker.check([1, [5, 3]], [1, [2, 3]])
    with pytest.raises(AssertionError, match=r"^k=2"):
        checker.check((1,), [1], msg="k=2")
    with pytest.raises(AssertionError, match="误差太大"):
        checker.check_close([1.0, 2.5], [1.0, 2.0])
    with pytest.raises(AssertionError, match="期望"):
        checker.check({"a": 1}, {"a": 1, "b": 2})
    assert isinstance(checker.raises(ValueError, int, "x"), ValueError)
    with checker.raises((KeyError, IndexError)) as r:
        [][1]
    assert isinstance(r.value, IndexError)
    with pytest.raises(AssertionError, match="应该抛出 KeyError，实际抛出了 ValueError"):
        with checker.raises(KeyError):
            int("x")
    with pytest.raises(checker.TimeLimitExceeded, match="超过限制"):
        with checker.time_limit(0.01):
            end = time.process_time() + 0.05
            while time.process_time() < end:
                pass


def test_checker_on_tensors():
    import checker
    torch = pytest.importorskip("torch")

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    checker.check_close(x + 1e-9, [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AssertionError, match=r"下标 \(1, 1\) 处期望 4，实际 4.5"):
        checker.check_close(torch.tensor([[1.0, 2.0], [3.0, 4.5]]), x)
    with pytest.raises(AssertionError, match="形状不对"):
        checker.check(torch.zeros(2, 3), torch.zeros(3, 2))


# ---- importing ----------------------------------------------------------------------------

def test_import_refuses_what_it_cannot_run_and_imports_the_rest(tmp_path, capsys):
    problems = tmp_path / "problems"
    assert judge_main(["import", str(HANDBOOK), "--problems", str(problems), "--no-check"]) == 1
    out = capsys.readouterr().out
    assert "broken-header: problem.md: broken front matter: line 5: `tags` has no value" in out
    assert "missing-solution: missing solution.py" in out
    assert "fused-add: a C++/CUDA problem" in out and "solution.cu" in out
    assert sorted(p.name for p in problems.iterdir()) == ["900-running-max", "901-row-softmax"]
    assert (tmp_path / "reference" / "checker.py").is_file()

    p = load_problem(problems / "900-running-max")
    # pure Python: the page runs its examples; row-softmax needs torch, so its Run is the server's
    assert (p.module, p.config.handbook.modules, p.config.browser) == ("solution", ["checker"],
                                                                       True)
    assert load_problem(problems / "901-row-softmax").config.browser is False
    src = p.config.source
    assert (src.licence, src.book, src.slug) == ("CC BY-NC-SA 4.0", "basics", "running-max")
    assert src.attribution and src.changes
    assert [t.name for t in p.tests("public")] == [
        "public/test_examples.py::test_example_statement",
        "public/test_examples.py::test_example_window_of_one"]
    assert len(p.tests("hidden")) == 5
    assert "only available in Chinese" in p.statement("en")
    assert p.statement("zh").startswith("# 滑动窗口最大值\n\n在 `solution.py`")  # one heading
    assert EXPLANATION_WORDS not in p.statement("zh") and EXPLANATION_WORDS in p.explanation()
    assert p.reference_path == (p.path / "reference" / "solution.py").resolve()
    assert load_problem(problems / "901-row-softmax").config.requires == ["torch"]

    # The slug is the key: importing again updates the folder, keeps its number and the
    # instructors' submissions/, and makes no second folder.
    wrong = p.path / "submissions" / "wrong_answer" / "last_window.py"
    wrong.parent.mkdir(parents=True)
    wrong.write_text("# expect: WA\n" + WRONG)
    assert judge_main(["import", str(RUNNING_MAX), "--problems", str(problems),
                       "--no-check"]) == 0
    assert "updated   basics/running-max" in capsys.readouterr().out
    assert sorted(p.name for p in problems.iterdir()) == ["900-running-max", "901-row-softmax"]
    assert wrong.is_file()
    assert judge_main(["import", str(RUNNING_MAX), "--problems", str(problems),
                       "--number", "905"]) == 1
    assert "keeps its number" in capsys.readouterr().out
    assert judge_main(["import", str(HANDBOOK / "kernels"), "--problems", str(problems),
                       "--number", "7"]) == 2  # one number for several problems


def test_import_with_a_number_and_a_native_slug(tmp_path, capsys):
    problems = tmp_path / "problems"
    native = problems / "141-running-max"
    shutil.copytree(load_problem("141").path, native)
    (native / "problem.toml").write_text(
        (native / "problem.toml").read_text().replace('"two-level-lru"', '"running-max"'))
    assert judge_main(["import", str(RUNNING_MAX), "--problems", str(problems)]) == 1
    assert "not imported from the handbook; it is left as it is" in capsys.readouterr().out
    softmax = HANDBOOK / "kernels" / "row-softmax"
    assert judge_main(["import", str(softmax), "--problems", str(problems), "--number", "42",
                       "--no-check"]) == 0
    assert load_problem("42", problems).slug == "row-softmax"
    assert (problems / "042-row-softmax").is_dir()


def test_requires_and_language_markers_refuse_native_problems(tmp_path):
    from judge.authoring.handbook_format import Refused, read_problem

    folder = tmp_path / "book" / "kernel"
    shutil.copytree(RUNNING_MAX, folder)
    md = folder / "problem.md"
    md.write_text(md.read_text().replace("tags:", "requires: [cuda_kernel]\ntags:"))
    with pytest.raises(Refused, match="C\\+\\+/CUDA problem: its front matter requires "
                                      "cuda_kernel"):
        read_problem(folder)
    md.write_text(md.read_text().replace("requires: [cuda_kernel]", "language: cpp"))
    with pytest.raises(Refused, match="language is cpp"):
        read_problem(folder)


# ---- judge check, local grading -----------------------------------------------------------

def test_judge_check_proves_the_plain_problem(bank):
    res = check_problem(bank / "900-running-max")
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    rows = {r["submission"]: r["verdict"] for r in res.table()}
    assert rows["reference"] == "AC" and rows["starter"] not in ("AC", "CE", "IE")
    # besides its grading, the reference ran 3 times, every test passing in each: not flaky
    assert res.table()[0]["runs"] == ["passed"] * 3 and res.flaky == {}


@pytest.mark.slow
def test_judge_check_proves_the_torch_problem(bank):
    pytest.importorskip("torch")
    # as `judge check` runs it: its suite runs fork from warm zygotes (judge/cli/main.py
    # cmd_check: warm_pool.use_by_default; cold where no zygote can be made), so its gradings
    # and reference runs fork from a zygote that imported torch once instead of each of their
    # processes importing it (the plain problem's check stays cold: its cold reference run is
    # the one this module's later gradings of 900 read)
    with warm_pool.forced(True):
        res = check_problem(bank / "901-row-softmax")
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    ref = res.table()[0]
    assert ref["verdict"] == "AC" and ref["tests"]["hidden/test_hidden.py::test_on_the_gpu"] in (
        "AC", "SKIP")


def test_graded_locally(bank, tmp_path, capsys):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(WRONG)
    assert judge_main(["grade", "900", str(wrong), "--problems", str(bank), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "WA"
    first = report["first_failure"]
    assert first["test"] == "public/test_examples.py::test_example_statement"
    assert first["message"] == "结果\n  期望：[3, 3, 5, 5, 6, 7]\n  实际：[3, 3, 5, 5, 6]"
    assert first["where"] == "test_examples.py:11"  # brute_force stays in the hidden file
    hidden = {t["name"]: t for t in report["tests"] if t["suite"] == "hidden"}
    failed = hidden["hidden/test_hidden.py::test_whole_list"]
    # a hidden assertion says only that it failed (one fixed word), never the values
    assert failed["verdict"] == "WA" and failed["failure"] == {
        "kind": "failed", "label": None, "exc_type": None, "line": None}
    assert "[8]" not in json.dumps(hidden)
    assert grade(load_problem("900", bank), solution_source()).verdict == "AC"


FORGED = '''import os
import judge_runner.plugin as plugin

for name in NAMES:
    plugin.S.writer.emit("test_started", test=name, t=0.0, limit_s=5.0)
    plugin.S.writer.emit("test_finished", test=name, outcome="passed", duration_s=0.0, cpu_s=0.0)
plugin.S.writer.emit("finished", t=0.0, tests_s=0.0, exit_code=0, torch=None, gpu_name=None)
os._exit(0)
'''


def test_a_forged_pass_is_not_accepted(bank):
    """An imported problem's tests run in a process of their own (docs/IMPORTED_GRADING.md):
    the submission's process has no runner pipe to write `passed` lines to."""
    p = load_problem("900", bank)
    names = [t.node for t in p.tests()]
    report = grade(p, f"NAMES = {names!r}\n" + FORGED)
    assert str(report.verdict) not in ("AC", "IE") and report.score == 0.0
    assert all(str(t.verdict) != "AC" for t in report.tests)


def test_practice_judge_shows_the_explanation_after_an_ac(bank, tmp_path, monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "practice_judge", Path(__file__).resolve().parents[2] / "practice" / "judge.py")
    practice = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(practice)
    monkeypatch.setenv("KVPRACTICE_PROBLEMS", str(bank))
    monkeypatch.setenv("KVPRACTICE_WORKSPACE", str(tmp_path))
    wrong, right = tmp_path / "wrong.py", tmp_path / "right.py"
    wrong.write_text(WRONG)
    right.write_text(solution_source())
    assert practice.main(["test", "900", str(wrong), "--lang", "zh"]) == 1
    assert EXPLANATION_WORDS not in capsys.readouterr().out
    assert practice.main(["test", "900", str(right), "--run", "--lang", "zh"]) == 0
    assert EXPLANATION_WORDS not in capsys.readouterr().out  # the examples alone are no AC
    assert practice.main(["test", "900", str(right), "--lang", "zh"]) == 0
    assert EXPLANATION_WORDS in capsys.readouterr().out


# ---- on the web, and by a remote worker ---------------------------------------------------

def _settings(bank: Path, tmp_path: Path, **kw):
    from web.settings import Settings
    return Settings(data_dir=tmp_path / "data", problems_dir=bank,
                    reference_dir=bank.parent / "reference", reaper_interval_s=0.2, **kw)


def _wait_done(client, sid, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/submissions/{sid}").json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not graded within {timeout} s: {body}")


def test_graded_on_the_web_and_the_explanation_waits_for_an_ac(bank, tmp_path):
    from web.app import create_app
    from web.jobs.graders import judge_grader

    app = create_app(_settings(bank, tmp_path), grader=judge_grader, workers=1)
    with TestClient(app) as c:
        page = c.get("/problems/900?lang=zh").text
        assert "CC BY-NC-SA 4.0" in page and "creativecommons.org/licenses/by-nc-sa/4.0" in page
        assert "basics/running-max" in page
        assert EXPLANATION_WORDS not in page and "通过（AC）之后会显示" in page
        assert EXPLANATION_WORDS not in json.dumps(c.get("/api/problems/900").json(),
                                                   ensure_ascii=False)

        sid = c.post("/api/submissions", json={"problem": "900", "code": WRONG}).json()["id"]
        done = _wait_done(c, sid)
        assert done["verdict"] == "WA"
        assert done["report"]["first_failure"]["message"].startswith("结果\n  期望：[3, 3, 5, 5, 6, 7]")
        assert EXPLANATION_WORDS not in c.get("/problems/900").text

        sid = c.post("/api/submissions", json={"problem": "running-max",
                                               "code": solution_source()}).json()["id"]
        assert _wait_done(c, sid)["verdict"] == "AC"
        page = c.get("/problems/900?lang=en").text
        assert EXPLANATION_WORDS in page and "通过（AC）之后会显示" not in page
        c.cookies.clear()  # another visitor, without an AC
        assert EXPLANATION_WORDS not in c.get("/problems/900").text


def test_graded_by_a_remote_worker(bank, tmp_path):
    """The remote worker's half (its warm grader, ApiBackend, run_job) against the API."""
    from judge.grading.warm_grader import WarmGrader
    from judge.problem import ProblemBank
    from web.app import create_app
    from web.client import WorkerClient
    from web.jobs.remote_backend import ApiBackend
    from web.jobs.runner import run_job

    st = _settings(bank, tmp_path, worker_token="worker-secret")
    with TestClient(create_app(st, workers=0)) as c:
        sid = c.post("/api/submissions", json={"problem": "900", "code": WRONG}).json()["id"]
        client = WorkerClient("http://testserver", "worker-secret", http=c)
        c.headers["X-Worker-Token"] = "worker-secret"
        (wid,) = client.call("/api/workers/register", {"host": "remote-1", "pid": 7,
                                                       "device": "cpu"})["workers"]
        catalog = ProblemBank(st.problems_dir, st.reference_dir)
        assert run_job(ApiBackend(client), catalog, WarmGrader("cpu"), sid, wid, 0.2,
                       check_version=True, provenance={"worker": wid}) == "stored"
        del c.headers["X-Worker-Token"]
        done = c.get(f"/api/submissions/{sid}").json()
    assert done["verdict"] == "WA" and done["report"]["provenance"]["worker"] == wid
    hidden = [t for t in done["report"]["tests"] if t["suite"] == "hidden"]
    assert hidden and all(set(t["failure"] or {}) <= {"kind", "label", "exc_type", "line"}
                          for t in hidden)
