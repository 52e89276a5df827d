"""A student's package (issue 29) from the outside: every file of the packages of 141-144 and of
an imported problem, searched for what must never be there (a hidden test's name, a reference's
code, a hidden helper, an explanation); the package unpacked into a folder of its own and used
with a Python that has pytest and nothing else of this project; its `test` judged as the page
and the server judge; and `judge.py login` / `submit` against a served platform (graded by the
stand-in e2e.fake_grader:quick: the transport is what is tested here; tests/e2e/
test_student_package.py submits to the real grader)."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from imported_bank import imported_bank
from package_support import (
    judge_py,
    personal_token,
    platform,
    pytest_only_site,
    signed_up,
    student_env,
    unpack,
)
from paths import REPO

from judge.handout.audit import findings, secrets_of
from judge.handout.build import Scope, build_package
from judge.problem import load_problem

P143 = REPO / "problems" / "143-tiered-kv-cache"
ACCEPTED = (P143 / "submissions/accepted/chapter_walkthrough.py").read_text()
GRADED_BOOK = REPO / "tests" / "fixtures" / "handbook_graded" / "book"
EXPLAINED = REPO / "tests" / "fixtures" / "handbook_problems" / "basics" / "running-max"
# What a student gets for 143, besides the runner (judge.py, lib/): nothing else.
FILES_143 = {
    "README.md", "judge.py", "package.json",
    "problems/143-tiered-kv-cache/problem.json",
    "problems/143-tiered-kv-cache/statement.en.md",
    "problems/143-tiered-kv-cache/statement.zh.md",
    "problems/143-tiered-kv-cache/starter/tiered.py",
    "problems/143-tiered-kv-cache/tests/public/fake_kv.py",
    "problems/143-tiered-kv-cache/tests/public/test_basic.py",
    "problems/143-tiered-kv-cache/tests/public/test_examples.py",
    # the handbook modules tiered.py builds on (prefix_cache.py is 142's answer: see below)
    "problems/143-tiered-kv-cache/handbook/paged.py",
    "problems/143-tiered-kv-cache/handbook/prefix_cache.py",
}

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return pytest_only_site(tmp_path_factory.mktemp("pytest-only"))


@pytest.fixture(scope="module")
def pkg143(tmp_path_factory) -> Path:
    pkg = build_package([load_problem("143")], Scope("problem", "143"), None)
    return unpack(pkg.zip_bytes(), tmp_path_factory.mktemp("student"))


# ---- what is in a package, and what never is ------------------------------------------------

def _secret_words(problem) -> set[str]:
    """Names of its hidden tests, hidden files and hidden helpers that it does not show anyway
    (a public test of the same name, the statement's list of what the tests cover)."""
    shown = "\n".join([problem.statement("en"), problem.statement("zh"),
                       *problem.public_files().values()])
    words = {t.function.rsplit("::", 1)[-1] for t in problem.tests("hidden")}
    words |= {p.stem for p in problem.suite_dir("hidden").glob("*.py")}
    return {w for w in words if not re.search(rf"(?<!\w){w}(?!\w)", shown)}


def _code_lines(path: Path, shown: str) -> set[str]:
    """The lines of a secret file a copy would carry: long, and not shown anyway."""
    known = {line.strip() for line in shown.splitlines()}
    return {s for line in path.read_text(encoding="utf-8").splitlines()
            if len(s := line.strip()) >= 30 and s not in known and not s.startswith(
                ("from ", "import ", "#", '"""'))}


def assert_holds_no_secret(files: dict[str, bytes], problems: list) -> None:
    for p in problems:
        shown = "\n".join(v.decode("utf-8", "replace") for k, v in files.items()
                          if k.startswith(f"problems/{p.name}/") and not k.endswith(".json"))
        words = _secret_words(p)
        secret_files = [p.reference_path, *p.suite_dir("hidden").rglob("*.py"),
                        *p.path.glob("explanation.*.md")]
        lines = {f: _code_lines(f, shown) for f in secret_files}
        for path, data in files.items():
            text = data.decode("utf-8", "replace")
            assert "/hidden/" not in path and "/reference/" not in path, path
            found = [w for w in words if re.search(rf"(?<!\w){w}(?!\w)", text)]
            assert not found, f"{path} holds hidden names of {p.name}: {found}"
            own = {line.strip() for line in text.splitlines()}
            for f, secret in lines.items():
                assert len(secret & own) < 3, f"{path} holds code of {f.relative_to(f.parents[2])}"


def test_the_package_of_143_holds_exactly_what_a_student_needs(pkg143):
    files = {p.relative_to(pkg143).as_posix(): p.read_bytes()
             for p in sorted(pkg143.rglob("*")) if p.is_file()}
    print("\n".join(sorted(f for f in files if not f.startswith("lib/"))))
    assert {f for f in files if not f.startswith("lib/")} == FILES_143
    lib = {f for f in files if f.startswith("lib/")}
    assert {"lib/judge/browser/page_run.py", "lib/judge/cli/console.py",
            "lib/web/submit_client.py", "lib/web/token_store.py"} <= lib
    # the runner is the judge's browser-safe rooms, not the grading core or the bank
    assert not any(f.startswith(("lib/judge/grading/", "lib/judge/sandbox/", "lib/judge/problem/",
                                 "lib/judge/authoring/", "lib/reference/")) for f in lib)
    p = load_problem("143")
    assert_holds_no_secret(files, [p])
    meta = json.loads(files["problems/143-tiered-kv-cache/problem.json"])
    assert set(meta["expected"]) == {t.name for t in p.tests("public")}
    assert all(not n.startswith("hidden/") for h in meta["hints"] for n in h["tests"])
    assert stat.S_IMODE((pkg143 / "judge.py").stat().st_mode) & 0o100


def test_141_to_144_and_imported_problems_hold_no_secret(tmp_path_factory):
    bank = imported_bank(tmp_path_factory, GRADED_BOOK, "package-imported")
    bank.update(imported_bank(tmp_path_factory, EXPLAINED, "package-explained"))
    problems = [load_problem(n) for n in ("141", "142", "144")] + list(bank.values())
    for p in problems:
        pkg = build_package([p], Scope("problem", p.name), None)
        assert [x["id"] for x in pkg.manifest["problems"]] == [p.id]
        assert_holds_no_secret(pkg.files, [p])
    explained = [p for p in bank.values() if p.explanation("zh")]
    assert explained, "the fixture book has explanations to keep out"


def test_a_package_of_142_and_143_leaves_143_out_and_says_why():
    problems = [load_problem(n) for n in ("141", "142", "143", "144")]
    pkg = build_package(problems, Scope("assignment", "KV"), "http://127.0.0.1:1")
    assert [x["id"] for x in pkg.manifest["problems"]] == ["141", "142"]
    gone = {x["id"]: x["holds_secrets_of"] for x in pkg.manifest["left_out"]}
    assert gone == {"143": ["142-prefix-caching-pool"], "144": ["142-prefix-caching-pool"]}
    assert_holds_no_secret(pkg.files, problems[:2])
    assert "143-tiered-kv-cache" in pkg.files["README.md"].decode()


def test_the_audit_finds_a_planted_reference_hidden_test_and_helper():
    p = load_problem("143")
    secrets = secrets_of(p, [p.starter_source, *p.public_files().values()])
    clean = {"a.py": b"x = 1\n"}
    assert findings(clean, [secrets]) == []
    helper = (p.suite_dir("hidden") / "kvtools.py").read_text()
    planted = {"ref.py": p.reference_path.read_bytes(), "h.py": helper.encode(),
               "names.txt": b"see test_gpu_hits_protected",
               "p.json": json.dumps({"x": p.reference_path.read_text()}).encode()}
    said = " ".join(findings(planted, [secrets]))
    for what in ("ref.py: ", "reference tiered.py", "h.py: ", "hidden/kvtools.py",
                 "'test_gpu_hits_protected'", "p.json: "):
        assert what in said, (what, said)


# ---- from the unpacked package ---------------------------------------------------------------

def test_a_student_works_from_the_package_with_pytest_alone(pkg143, site, tmp_path):
    env = student_env(site, tmp_path)
    no_torch = subprocess.run([sys.executable, "-S", "-c", "import torch"], env=env,
                              capture_output=True, text=True)
    assert no_torch.returncode != 0  # nothing but pytest there
    out = judge_py(pkg143, env, "list")
    assert out.returncode == 0 and "143-tiered-kv-cache" in out.stdout, out.stderr
    out = judge_py(pkg143, env, "start", "143")
    work = pkg143 / "workspace" / "143-tiered-kv-cache.py"
    assert out.returncode == 0 and work.read_text() == (P143 / "starter/tiered.py").read_text()
    out = judge_py(pkg143, env, "test", "143")
    assert out.returncode == 1 and "First failure" in out.stdout, out.stdout + out.stderr
    work.write_text(ACCEPTED.replace("            elif h in self.host:",
                                     "            elif h not in self.hash_to_block:"))
    out = judge_py(pkg143, env, "test", "143")
    head = out.stdout[out.stdout.index("First failure"):]
    assert re.search(r"\n  KeyError: \d+\n  in your file workspace/143-tiered-kv-cache\.py, "
                     r"line 49, in lookup\n", head), head
    assert 'File "workspace/143-tiered-kv-cache.py", line 49' in head
    assert "Hint 1: " in head and "python judge.py hint 143" in head
    first = judge_py(pkg143, env, "hint", "143").stdout
    assert "Hint 1: " in first and "Hint 2: " in first
    zh = judge_py(pkg143, env, "test", "143", "--lang", "zh").stdout
    assert "在你的文件 workspace/143-tiered-kv-cache.py 第 49 行" in zh and "提示 1：" in zh
    work.write_text(ACCEPTED)
    out = judge_py(pkg143, env, "test", "143")
    assert out.returncode == 0 and "Verdict: AC" in out.stdout, out.stdout + out.stderr
    assert "python judge.py submit 143" in out.stdout
    assert "last: AC 100%" in judge_py(pkg143, env, "list").stdout
    out = judge_py(pkg143, env, "check")
    assert out.returncode == 2 and "checkout" in out.stderr


@pytest.mark.parametrize("content", [b"", b"\n  \n", "# caf\xe9\n".encode("latin-1")],
                         ids=["empty", "blank", "latin-1"])
def test_json_is_json_whatever_the_file(pkg143, site, tmp_path, content):
    env = student_env(site, tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_bytes(content)
    for verb in ("test", "submit"):
        out = judge_py(pkg143, env, verb, "143", bad, "--json")
        assert out.returncode == 2
        err = json.loads(out.stdout)["error"]
        assert err["code"] in ("empty_file", "not_utf8") and str(bad) in err["message"]
    out = judge_py(pkg143, env, "test", "143", tmp_path / "missing.py", "--json")
    assert json.loads(out.stdout)["error"]["code"] == "no_file"
    out = judge_py(pkg143, env, "test", "999", "--json")
    assert "no problem named" in json.loads(out.stdout)["error"]["message"]


# The page's parity test (tests/browser/test_page_parity.py) holds the page's runner and the
# server equal; a package runs the page's runner on what it carries, so it must agree too.
DIVERGENCE = ("test", "verdict", "kind", "label", "expected", "got", "path", "index", "message",
              "exc_type", "line", "where", "traceback", "trace")
SAMPLES = ["wrong_answer/host_fifo.py", "wrong_answer/skips_misses.py",
           "wrong_answer/rereads_host_after_allocate.py", "accepted/host_store.py"]


def test_the_package_judges_as_the_page_and_the_server(pkg143, site, tmp_path):
    from judge import grade
    env = student_env(site, tmp_path)
    p = load_problem("143")
    files = {name: (P143 / "submissions" / name).read_text() for name in SAMPLES}
    files["starter"] = p.starter_source
    for name, source in files.items():
        f = tmp_path / "mine.py"
        f.write_text(source)
        here = json.loads(judge_py(pkg143, env, "test", "143", f, "--json").stdout)
        server = grade(p, source, suite="public").to_dict()
        assert here["verdict"] == server["verdict"], name
        assert [(t["name"], t["verdict"]) for t in here["tests"]] == \
            [(t["name"], t["verdict"]) for t in server["tests"]], name
        assert {k: (here["first_failure"] or {}).get(k) for k in DIVERGENCE} == \
            {k: (server["first_failure"] or {}).get(k) for k in DIVERGENCE}, name
        assert [h["id"] for h in here["hints"]] == [h["id"] for h in server["hints"]], name


# ---- login and submit ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data = tmp_path_factory.mktemp("served")
    with platform(data, "--grader", "e2e.fake_grader:quick", "--skip-build-check") as base:
        yield base


def test_submit_from_the_downloaded_package_counts_for_the_account(served, site, tmp_path):
    import httpx
    dana = signed_up(served, "dana")
    root = unpack(httpx.get(f"{served}/problems/143/package.zip", timeout=120).content,
                  tmp_path / "download")
    assert json.loads((root / "package.json").read_text())["server"] == served
    env = student_env(site, tmp_path)
    mine = tmp_path / "tiered.py"
    mine.write_text(ACCEPTED)
    before = (mine.read_bytes(), mine.stat().st_mtime_ns)
    out = judge_py(root, env, "submit", "143", mine)
    assert out.returncode == 2 and "Not signed in" in out.stderr and "/account" in out.stderr
    token = personal_token(dana)
    out = judge_py(root, env, "login", stdin=token + "\n")
    assert out.returncode == 0 and "as dana" in out.stdout, out.stdout + out.stderr
    cred = Path(env["KVPRACTICE_CREDENTIALS"])
    assert stat.S_IMODE(cred.stat().st_mode) == 0o600 and token in cred.read_text()
    out = judge_py(root, env, "submit", "143", mine)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    sid = int(re.search(r"as #(\d+)", lines[0]).group(1))
    live = [i for i, line in enumerate(lines) if re.match(r"  AC\s+\d+\.\d+s  public/", line)]
    verdict = [i for i, line in enumerate(lines) if line.startswith("Verdict: AC")]
    assert live and verdict and live[0] < verdict[0], out.stdout  # test by test, then the verdict
    listed = dana.get("/api/submissions").json()["submissions"]
    assert [(s["id"], s["verdict"]) for s in listed] == [(sid, "AC")]
    report = json.loads(judge_py(root, env, "submit", "143", mine, "--json").stdout)
    assert report["verdict"] == "AC"
    assert (mine.read_bytes(), mine.stat().st_mtime_ns) == before  # never changed


def test_offline_or_refused_nothing_is_lost(served, site, tmp_path, monkeypatch):
    from package_support import free_port

    from web import token_store
    root = unpack(build_package([load_problem("143")], Scope("problem", "143"),
                                served).zip_bytes(), tmp_path / "pkg")
    env = student_env(site, tmp_path)
    mine = tmp_path / "tiered.py"
    mine.write_text(ACCEPTED)
    eve = signed_up(served, "eve")
    token = personal_token(eve)
    assert judge_py(root, env, "login", stdin=token).returncode == 0
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("KVPRACTICE_CREDENTIALS", env["KVPRACTICE_CREDENTIALS"])
    token_store.save(dead, token)  # signed in there, but nothing answers
    out = judge_py(root, env, "submit", "143", mine, "--server", dead)
    assert out.returncode == 2 and "Cannot reach" in out.stderr and "Nothing was sent" in out.stderr
    assert f"Your file {mine} is unchanged" in out.stderr
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" + "#" * 200_000)
    out = judge_py(root, env, "submit", "143", big)
    assert out.returncode == 2 and "refused it" in out.stderr and "limit" in out.stderr, out.stderr
    page = eve.get("/account").text
    tid = re.search(r'data-token="(\d+)"', page).group(1)
    assert eve.post(f"/account/tokens/{tid}/revoke").status_code == 303
    out = judge_py(root, env, "submit", "143", mine)
    assert out.returncode == 2 and "refused your token" in out.stderr, out.stderr
    assert mine.read_text() == ACCEPTED
    assert eve.get("/api/submissions").json()["submissions"] == []
