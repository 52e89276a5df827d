"""A host whose sandbox has no private filesystem view (no bubblewrap: many GPU cluster hosts)
grades its own user's code and says which layers are missing, but `judge worker` and
`judge serve` with grading workers refuse other people's code there unless told the code is
trusted (--allow-weak-sandbox)."""

from __future__ import annotations

import pytest

import judge.sandbox
from judge.cli.console import Console, print_report
from judge.sandbox.layers import Probe
from web import cli

FULL = {"python_runs": True, "rlimits": True, "uid_drop": True, "private_fs": True,
        "netns": "bwrap", "pidns": "bwrap", "cgroup": "v2", "caps_dropped": True,
        "no_new_privs": True, "scrubbed_env": True, "seccomp": True, "bwrap": True}


def _probe(**layers) -> Probe:
    merged = dict(FULL, **layers)
    details = {"bwrap": "bubblewrap is not installed (apt-get install bubblewrap)"
               if not merged["bwrap"] else "/usr/bin/bwrap works"}
    return Probe(merged, details, "bwrap" if merged["bwrap"] else "unshare")


@pytest.fixture
def weak(monkeypatch):
    monkeypatch.setattr(judge.sandbox, "probe_layers",
                        lambda refresh=False: _probe(bwrap=False, private_fs=False,
                                                     seccomp=False, cgroup=None,
                                                     netns="unshare", pidns="unshare"))


@pytest.fixture
def full(monkeypatch):
    monkeypatch.setattr(judge.sandbox, "probe_layers", lambda refresh=False: _probe())


def test_worker_refuses_without_a_private_filesystem(weak, tmp_path, capsys):
    assert cli.main(["worker", "--data", str(tmp_path), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "judge worker: refusing to grade submissions here" in err
    assert "bubblewrap is not installed" in err
    assert "private_fs" in err and "seccomp" in err and "cgroup" in err
    assert "--allow-weak-sandbox" in err
    assert "judge grade" in err  # local practice goes on
    assert not list(tmp_path.iterdir())  # refused before opening the database


REMOTE = ["worker", "--queue", "redis://127.0.0.1:9/0", "--server", "http://127.0.0.1:9",
          "--worker-token", "t"]


def test_remote_worker_refuses_too(weak, capsys):
    assert cli.main(REMOTE) == 2
    assert "refusing to grade submissions" in capsys.readouterr().err


def test_usage_errors_come_first(weak, capsys):
    assert cli.main(["worker", "--server", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "needs --queue" in err and "refusing" not in err


def test_serve_with_grading_workers_refuses(weak, tmp_path, capsys):
    assert cli.main(["serve", "--workers", "1", "--skip-build-check",
                     "--data", str(tmp_path)]) == 2
    assert "judge serve: refusing to grade submissions here" in capsys.readouterr().err


def test_the_override_lets_a_worker_start(weak, monkeypatch, capsys):
    # Past the sandbox check, the device check stops it before anything starts: no CUDA here.
    import judge.grading.environment
    monkeypatch.setattr(judge.grading.environment, "cuda_available", lambda: False)
    assert cli.main([*REMOTE, "--device", "cuda", "--allow-weak-sandbox"]) == 2
    err = capsys.readouterr().err
    assert "refusing" not in err
    assert "no CUDA device is available" in err


def test_full_sandbox_is_not_refused(full):
    assert cli.weak_sandbox_refusal("worker", cli.WEAK_SANDBOX_FLAG) is None


def test_local_report_names_the_missing_layers(capsys):
    report = {"verdict": "AC", "score": 1.0, "tests": [
        {"name": "public/test_a.py::test_x", "suite": "public", "verdict": "AC", "time_s": 0.01}],
        "provenance": {"missing_layers": ["private_fs", "seccomp"]}}
    con = Console("en")
    print_report(con, report)
    out = capsys.readouterr().out
    assert "Sandbox layers missing here: private_fs, seccomp" in out
    assert "Verdict: AC" in out.replace("\x1b[32m", "").replace("\x1b[0m", "")
    report["provenance"]["missing_layers"] = []
    print_report(con, report)
    assert "missing here" not in capsys.readouterr().out
