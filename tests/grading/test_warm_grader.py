"""Issue 19: the warm grader's zygote (judge/sandbox/forkserver.py, judge/runner/forkserver/zygote.py):
what a fork sees, and when a zygote is replaced. Its verdicts are test_warm_same_verdicts.py's;
the sandbox's own tests run on both paths (tests/sandbox_paths.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

import pytest

from judge import grade
from judge.grading import warm_pool
from judge.grading.reference_cache import get_reference
from judge.sandbox import Limits, run_sandboxed
from judge.sandbox.forkserver import warm_possible

from grading.test_grade_end_to_end import FIRST, REFERENCE

pytestmark = pytest.mark.skipif(not warm_possible()[0], reason=str(warm_possible()[1]))


@pytest.fixture(scope="module")
def server():
    s = warm_pool.start_server()
    yield s
    s.close()


def _py(server, code: str, scratch: str, **kw):
    return server.run([sys.executable, "-c", code], scratch=scratch,
                      limits=Limits(wall_s=30, cpu_s=30, scratch_mb=8, scratch_files=100), **kw)


def _bound_back(server) -> list[str]:
    """The names in a fork's /tmp that the Python trees bound back there make (a clone under
    /tmp has its venv there: /tmp/<clone> then holds only that tree)."""
    return [os.path.relpath(r, "/tmp").split(os.sep)[0] for r in server.tmp_roots]


def test_a_fork_sees_its_own_view_only(server, scratch):
    """No other grading folder, no host temporary folder, no zygote, no uid of root."""
    other = tempfile.mkdtemp(prefix="judge-other-")  # stands for another grading's folder
    try:
        code = ("import os; print(repr((sorted(os.listdir('/tmp')), os.listdir('/.judge-host'),"
                " sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), os.getuid(),"
                " os.path.exists(%r))))" % other)
        r = _py(server, code, scratch)
        assert r.returncode == 0, r.stderr
        listing, host, pids, uid, sees_other = eval(r.stdout.decode())
        # the host's temporary folder was unmounted: its mount point is left, empty
        assert listing == sorted({os.path.basename(scratch), *_bound_back(server)})
        assert host == [] and sees_other is False
        assert pids == [1, 2] and uid != 0  # its pid-1 reaper and itself
        assert r.layers["grader_path"] == "warm" and r.layers["seccomp"]
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_fork_cannot_mount_unshare_or_make_a_user_namespace(server, scratch):
    code = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print(libc.unshare(0x10000000), libc.unshare(0x00020000),
      libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
try:
    os.setuid(0)
    print("root")
except PermissionError:
    print("no root")
'''
    r = _py(server, code, scratch)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().split() == ["-1", "-1", "-1", "no", "root"]


def test_the_scratch_filesystem_is_the_runs_own_and_gone_after(server, scratch):
    r = _py(server, "open('x', 'w').write('y' * 100); import os; print(os.statvfs('.').f_files)",
            scratch)
    assert r.returncode == 0 and int(r.stdout) == 101, r.stderr
    assert os.listdir(scratch) == []
    r = _py(server, "open('big', 'wb').write(b'0' * (9 << 20))", scratch)
    assert r.disk_exceeded


def test_a_dead_zygote_is_replaced_and_a_grading_still_warm(problem, cache):
    with warm_pool.forced(True):
        first = warm_pool.server_for(problem)
        os.kill(first.pid, 9)
        first._proc.wait()
        r = grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
        again = warm_pool.server_for(problem)
    assert again is not first and again.alive()
    assert str(r.verdict) == "AC" and r.provenance["sandbox_layers"]["grader_path"] == "warm"


def test_a_zygote_is_replaced_after_its_runs(problem, cache, monkeypatch):
    monkeypatch.setattr(warm_pool, "MAX_RUNS", 1)
    with warm_pool.forced(True):
        grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
        s1 = warm_pool.server_for(problem)
        grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
        s2 = warm_pool.server_for(problem)
    assert s1 is not s2 and not s1.alive()


def test_without_bubblewrap_grading_is_cold(problem, cache, monkeypatch):
    from judge.sandbox import forkserver

    monkeypatch.setattr(warm_pool, "warm_possible", lambda: (False, "no bubblewrap"))
    with warm_pool.forced(True):
        r = grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
    assert str(r.verdict) == "AC" and "grader_path" not in r.provenance["sandbox_layers"]
    assert forkserver.warm_possible()[0]


def _write_through(server, scratch, fd, **kw):
    code = f"import os; os.write({fd}, b'through'); print('ran')"
    got = bytearray()
    r_end = kw.pop("r_end")
    r = server.run([sys.executable, "-c", code], scratch=scratch, pass_fds=(fd,),
                   readers={r_end: lambda b: got.extend(b)},
                   limits=Limits(wall_s=30, cpu_s=30, scratch_mb=8, scratch_files=100), **kw)
    return r, bytes(got)


def test_a_descriptor_numbered_above_the_runs_open_files_limit_reaches_the_run(server, scratch):
    """A busy host (a long test session, a server with many connections) hands its results
    pipe over as, say, fd 300; the run's RLIMIT_NOFILE is 256. The fork places it before the
    limit is set, as a cold run inherits it: it once failed its setup with EBADF instead."""
    from judge.sandbox import child_pipe

    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(Limits().open_files + 40)]
    try:
        r_end, w_end = child_pipe()
        assert w_end > Limits().open_files
        try:
            r, got = _write_through(server, scratch, w_end, r_end=r_end)
        finally:
            os.close(r_end)
    finally:
        for fd in held:
            os.close(fd)
    assert r.setup_error is None and r.returncode == 0, (r.setup_error, r.stderr)
    assert got == b"through" and r.stdout == b"ran\n" and r.layers["grader_path"] == "warm"
    with pytest.raises(OSError):
        os.fstat(w_end)  # closed, as run_sandboxed closes what it passed


def test_a_fork_whose_setup_failed_is_graded_cold_on_a_pipe_of_its_own(problem,
                                                                         cache, monkeypatch):
    """Nothing of the submission ran, so suite_run runs it again cold, with a new results
    pipe: the fork's pass_fds are closed (the retry once reused their numbers, by then closed
    or another thread's, and lost every result). The zygote is retired."""
    from judge.sandbox import forkserver

    real = forkserver.ForkServer.run

    def failing_setup(self, argv, *a, **kw):  # a name the fork cannot put in its environment
        kw["env"] = dict(kw.get("env") or {}, **{"NO=NAME": "1"})
        return real(self, argv, *a, **kw)

    with warm_pool.forced(True):
        grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)  # the reference
        zygote = warm_pool.server_for(problem)
        monkeypatch.setattr(forkserver.ForkServer, "run", failing_setup)
        before = warm_pool.fallbacks()
        r = grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
    assert str(r.verdict) == "AC", r.ie_cause
    assert "grader_path" not in r.provenance["sandbox_layers"]  # graded cold
    assert warm_pool.fallbacks() == before + 1 and not zygote.alive()


def test_a_python_under_tmp_is_still_there_in_a_fork(scratch, monkeypatch):
    """A fresh clone in /tmp has its venv under /tmp, which each fork covers with its own
    tmpfs: a module the zygote had not imported (safetensors, imported by a submission at call
    time) was then missing, and an accepted file graded WA warm and AC cold. The fork binds
    the Python trees under /tmp back, as a cold run's bwrap binds them over its /tmp."""
    from judge.sandbox import bwrap, forkserver

    tree = tempfile.mkdtemp(prefix="venv-like-", dir="/tmp")
    try:
        os.chmod(tree, 0o755)
        with open(os.path.join(tree, "only_under_tmp.py"), "w") as f:
            f.write("VALUE = 'found'\n")
        os.chmod(os.path.join(tree, "only_under_tmp.py"), 0o644)
        roots = bwrap.python_roots
        monkeypatch.setattr(bwrap, "python_roots", lambda argv0=None: roots(argv0) + [tree])
        monkeypatch.setattr(forkserver, "python_roots", bwrap.python_roots)
        s = warm_pool.start_server()
        try:
            assert tree in s.tmp_roots
            r = _py(s, f"import sys; sys.path.append({tree!r}); import only_under_tmp; "
                       "print(only_under_tmp.VALUE, sorted(__import__('os').listdir('/tmp')))",
                    scratch)
        finally:
            s.close()
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    assert r.returncode == 0 and r.layers["grader_path"] == "warm", r.stderr
    value, listing = r.stdout.decode().split(" ", 1)
    # the tree is back, and nothing else of the host's /tmp came with it
    assert value == "found" and eval(listing) == sorted({os.path.basename(scratch),
                                                         *_bound_back(s)})


def test_prewarm_starts_the_zygote_that_the_first_grading_then_forks_from(problem,
                                                                          cache):
    """In a thread that then ends: the zygote outlives it (bwrap's --die-with-parent is the
    forking thread's death; zygotes are started by one lasting thread, forkserver.py)."""
    with warm_pool.forced(True):
        # the warm reference first, whichever test ran before: its fork is not the one counted
        get_reference(problem, ["public"], "cpu", cache=cache)
        warm_pool.close_all()
        t = warm_pool.prewarm([problem])
        assert t is not None
        t.join(120)
        started = warm_pool._servers.get(warm_pool._key(problem))
        assert started is not None and started.alive() and started.runs == 0
        r = grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)
        assert warm_pool.server_for(problem) is started and started.runs == 1
    assert r.provenance["sandbox_layers"]["grader_path"] == "warm"
    with warm_pool.forced(False):
        assert warm_pool.prewarm([problem]) is None  # a cold process starts none


STATUS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
          "NoNewPrivs", "Seccomp")


def test_a_fork_holds_the_credentials_a_cold_run_holds(server, scratch):
    """Issue 28, item 4: a fork had CapInh 0x2001c0 (the zygote's four capabilities, kept in
    the inheritable set by bwrap's --cap-add) where a cold run has 0. Every capability set,
    no_new_privs and the seccomp mode as /proc/self/status shows them, uids aside (each run
    has a slot uid of its own)."""
    code = ("import json; print(json.dumps({k: v.strip() for k, v in (l.split(':', 1) for l in "
            "open('/proc/self/status')) if k in %r}))" % (STATUS,))
    warm = _py(server, code, scratch)
    cold = run_sandboxed([sys.executable, "-c", code], scratch=scratch,
                         limits=Limits(wall_s=30, cpu_s=30, scratch_mb=8, scratch_files=100))
    assert warm.returncode == 0 and cold.returncode == 0, (warm.stderr, cold.stderr)
    seen = {p: json.loads(r.stdout) for p, r in (("warm", warm), ("cold", cold))}
    for p in seen.values():
        assert len(set(p.pop("Uid").split())) == 1 and len(set(p.pop("Gid").split())) == 1
    assert seen["warm"] == seen["cold"]
    assert {seen["warm"][k] for k in STATUS[3:8]} == {"0000000000000000"}
    assert seen["warm"]["NoNewPrivs"] == "1" and seen["warm"]["Seccomp"] == "2"


def test_the_reference_is_timed_in_the_mode_it_grades_in(tmp_path):
    """A zygote has torch imported: a test whose first line imports torch took the reference
    nothing warm and seconds cold, and a cold run held to the warm figure (max(min_test_s, 4 x
    ~0 s)) was TLE for an accepted file on a busy machine (the parity check, CI at 72de10f).
    Each mode keeps its own reference times."""
    from judge import load_problem
    from judge.grading.reference_cache import ReferenceCache, get_reference

    fixture = os.path.join(os.path.dirname(__file__), "..", "e2e", "fixtures", "problems",
                           "901-toy-lru")
    problem = load_problem(os.path.abspath(fixture))
    cache, node = ReferenceCache(tmp_path / "c"), "public/test_torch_only.py::test_tensor_values"
    times = {}
    for warm in (True, False):
        with warm_pool.forced(warm):
            ref, cached = get_reference(problem, ["public"], "cpu", cache=cache)
            assert cached is False  # the other mode's file is not this one's
            assert cache.path(problem, "cpu").name.endswith("-warm.json" if warm else
                                                             "-cold.json")
            times[warm] = {t["name"]: t["time_s"] for t in ref["public"]["tests"]}[node]
    assert times[False] > times[True] + 0.5, times  # the import of torch, charged cold only
