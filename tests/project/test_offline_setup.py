"""The set-up path of a GPU host without a network, proven on the CPU.

`scripts/wheelhouse.sh` builds the wheelhouse for this machine's Python (PyPI is reachable here:
this is the machine with the package index). A "host" Python that already holds torch is a venv
whose site-packages has torch and its dependencies linked in from the environment running these
tests, and nothing else. `scripts/setup.sh --offline` then runs in a copy of the repository with
pip's index switched off (PIP_NO_INDEX=1, no pip configuration) and, where we may, inside a
network namespace of its own, so nothing can come from anywhere but the wheelhouse. The result
must keep the host's torch, hold everything else, and grade problem 143: the reference AC, the
unprotected-hits bug WA.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "problems" / "143-tiered-kv-cache"
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
# Enough of the repository to install and grade, without the front end's node_modules.
COPY = ["pyproject.toml", "README.md", "NOTICE", "requirements", "scripts/setup.sh",
        "scripts/wheelhouse.sh", "judge", "web", "reference", "problems"]
SKIP = shutil.ignore_patterns("node_modules", "__pycache__", "*.pyc", "static", "frontend",
                              "*.egg-info", ".cache")


def _env(**extra) -> dict:
    """This environment without pip's or the project's settings; no pip cache outside tmp."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "KVPRACTICE_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def _closure(name: str) -> list[metadata.Distribution]:
    """`name` and what it requires here (markers evaluated, no extras), as installed here."""
    from packaging.requirements import Requirement

    seen, todo, out = set(), [name], []
    while todo:
        n = todo.pop().lower().replace("_", "-")
        if n in seen:
            continue
        seen.add(n)
        try:
            dist = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            continue
        out.append(dist)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return out


def _make_host(where: Path) -> Path:
    """A Python whose site-packages holds torch (and its requirements) and nothing else."""
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = Path(_run([str(where / "bin" / "python"), "-c", "import sysconfig; "
                      "print(sysconfig.get_path('purelib'))"]).stdout.strip())
    src = Path(sysconfig.get_path("purelib"))
    for dist in _closure("torch"):
        for rel in dist.files or []:
            s = (src / rel).resolve()
            if not s.is_file() or src not in s.parents:
                continue  # scripts in bin/, files outside site-packages
            d = site / s.relative_to(src)
            d.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(s, d)  # same filesystem: no copy of torch's 700 MB
            except OSError:
                shutil.copy2(s, d)
    return where / "bin" / "python"


def _copy_repo(dest: Path) -> None:
    for rel in COPY:
        s, d = ROOT / rel, dest / rel
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d, ignore=SKIP)
        else:
            shutil.copy2(s, d)


def _no_network(cmd: list[str]) -> list[str]:
    """`cmd` in a network namespace of its own where this machine lets us make one."""
    unshare = shutil.which("unshare")
    if unshare and _run([unshare, "-n", "true"]).returncode == 0:
        return [unshare, "-n", *cmd]
    return cmd


@pytest.fixture
def world():
    # The sandbox's uid must reach the repository copy and the host's torch: not under a 0700
    # pytest tmp dir.
    base = Path(tempfile.mkdtemp(prefix="kvp-offline-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)  # ~20k files: faster than rmtree


def _fake_wheelhouse(where: Path, python: str = PY) -> Path:
    where.mkdir()
    (where / "requirements.txt").write_text("")
    (where / "wheelhouse.txt").write_text(f"python={python}\nplatform=manylinux_2_28_x86_64\n")
    return where


@pytest.mark.slow
def test_offline_setup_keeps_the_hosts_torch_and_grades_143(world):
    wh = world / "wheelhouse"
    # The download waits on the network: make the host and the copy meanwhile.
    build = subprocess.Popen(["bash", str(ROOT / "scripts" / "wheelhouse.sh"), str(wh),
                              "--python", PY], env=_env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        host = _make_host(world / "host")
        repo = world / "repo"
        _copy_repo(repo)
        out, err = build.communicate(timeout=600)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    assert build.returncode == 0, out + err
    assert "resolves offline: yes" in out
    names = [n.lower() for n in os.listdir(wh)]
    assert not [n for n in names if n.startswith(("torch-", "nvidia", "triton"))]
    assert "--hash=sha256:" in (wh / "requirements.txt").read_text()

    import torch
    host_torch = _run([str(host), "-c", "import torch; print(torch.__version__)"]).stdout.strip()
    assert host_torch == torch.__version__
    assert _run([str(host), "-c", "import fastapi"]).returncode != 0  # the host has only torch

    r = _run(_no_network(["bash", "scripts/setup.sh", "--offline", str(wh), "--python",
                          str(host)]), cwd=repo, env=_env(PIP_NO_INDEX="1"), timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"kept from the host: torch {torch.__version__}" in out
    assert "installed into .venv from the wheelhouse: " in out and "fastapi==" in out
    venv_py = repo / ".venv" / "bin" / "python"
    seen = _run([str(venv_py), "-s", "-c", "import torch; print(torch.__version__, torch.__file__)"])
    assert seen.stdout.split()[0] == torch.__version__
    assert str(world / "host") in seen.stdout  # the host's torch, not a copy in .venv
    assert not list((repo / ".venv").rglob("torch/__init__.py"))

    # The plain set-up afterwards must not put the CPU pin over the host's torch.
    r = _run(["bash", "scripts/setup.sh"], cwd=repo, env=_env(PIP_NO_INDEX="1"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "keeps the host's torch" in r.stderr
    assert not list((repo / ".venv").rglob("torch/__init__.py"))

    judge = str(repo / ".venv" / "bin" / "judge")
    env = _env(KVPRACTICE_CACHE=str(world / "cache"))
    # The public suite: enough to catch the bug and to run the engine, torch and the sandbox
    # from this .venv (the hidden suite's gradings are the other tests' business)
    for rel, suite, verdict in (("reference/tiered.py", "public", "AC"),
                                ("problems/143-tiered-kv-cache/submissions/wrong_answer/"
                                 "unprotected_hits.py", "public", "WA")):
        r = _run([judge, "grade", "143", rel, "--json", "--device", "cpu", "--suite", suite],
                 cwd=repo, env=env, timeout=300)
        assert r.stdout.strip(), r.stderr
        report = json.loads(r.stdout)
        assert report["verdict"] == verdict, (rel, report.get("ie_cause"), r.stderr[-2000:])
        assert report["provenance"]["torch"] == torch.__version__


def test_offline_setup_without_torch_on_the_host_says_so_and_stops(world):
    wh = _fake_wheelhouse(world / "wheelhouse")
    bare = world / "bare"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    repo = world / "repo"
    repo.mkdir()
    (repo / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    r = _run(["bash", "scripts/setup.sh", "--offline", str(wh), "--python",
              str(bare / "bin" / "python")], cwd=repo, env=_env(PIP_NO_INDEX="1"), timeout=60)
    assert r.returncode == 1
    assert "no Python here has torch >= 2.4" in r.stderr
    assert "without torch" in r.stderr
    assert not (repo / ".venv").exists()


def test_offline_setup_refuses_a_torch_older_than_2_4(world):
    wh = _fake_wheelhouse(world / "wheelhouse")
    old = world / "old"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(old)], check=True)
    site = Path(_run([str(old / "bin" / "python"), "-c", "import sysconfig; "
                      "print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(
        "__version__ = '2.3.1+cu121'\nclass version:\n    cuda = '12.1'\n")
    repo = world / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    r = _run(["bash", "scripts/setup.sh", "--offline", str(wh), "--python",
              str(old / "bin" / "python")], cwd=repo, env=_env(), timeout=60)
    assert r.returncode == 1
    assert "torch 2.3.1+cu121 (< 2.4)" in r.stderr


def test_offline_setup_wants_a_wheelhouse_for_the_hosts_python(world):
    wh = _fake_wheelhouse(world / "wheelhouse", python="3.99")
    host = world / "host"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(host)], check=True)
    site = Path(_run([str(host / "bin" / "python"), "-c", "import sysconfig; "
                      "print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(
        "__version__ = '2.11.0+cu130'\nclass version:\n    cuda = '13.0'\n")
    repo = world / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    r = _run(["bash", "scripts/setup.sh", "--offline", str(wh), "--python",
              str(host / "bin" / "python")], cwd=repo, env=_env(), timeout=60)
    assert r.returncode == 1
    assert f"holds wheels for Python 3.99, but the host's torch is on Python {PY}" in r.stderr
    assert f"--python {PY}" in r.stderr
    assert not (repo / ".venv").exists()


def test_offline_setup_does_not_take_its_own_venv_for_the_host(world):
    # An activated .venv with torch in it would otherwise be chosen, then replaced under itself.
    wh = _fake_wheelhouse(world / "wheelhouse")
    repo = world / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    own = repo / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(own)], check=True)
    site = Path(_run([str(own / "bin" / "python"), "-c", "import sysconfig; "
                      "print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(
        "__version__ = '2.13.0+cpu'\nclass version:\n    cuda = None\n")
    r = _run(["bash", "scripts/setup.sh", "--offline", str(wh), "--python",
              str(own / "bin" / "python")], cwd=repo, env=_env(), timeout=60)
    assert r.returncode == 1
    assert "this project's .venv, not the host's Python" in r.stderr
    assert (site / "torch" / "__init__.py").exists()
