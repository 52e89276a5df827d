"""requirements/runtime.txt is pyproject's dependency list without torch, and the code keeps to
the torch it claims (>= 2.4).

The wheelhouse for GPU hosts without a network is built from runtime.txt; a dependency added to
pyproject but not there would be missing on such a host, and one written differently would be
resolved differently. No torch older than the pin can be installed on the build machines (PyPI
has only CUDA builds for Linux, see the README), so the floor is guarded by refusing the APIs
that appeared after 2.4 instead of by running on 2.4.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lines(text: str) -> list[str]:
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines()
            if ln.split("#", 1)[0].strip()]


def _name(req: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", req).group(0)).lower()


def test_runtime_txt_is_pyproject_without_torch():
    with open(ROOT / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    runtime = _lines((ROOT / "requirements" / "runtime.txt").read_text())
    assert [d for d in deps if _name(d) != "torch"] == runtime
    torch = [d for d in deps if _name(d) == "torch"]
    # A floor, not a pin: a GPU host keeps its own CUDA build (scripts/setup.sh --offline).
    assert torch == ["torch>=2.4"]


def test_setup_installs_the_cpu_pin_on_the_normal_path():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert re.search(r'^torch_pin="torch==2\.\d+\.\d+"$', setup, re.M)


# torch APIs that appeared after 2.4 (with the release that added them), as this code would
# write them. Not complete; the ones a plain-PyTorch inference stack reaches for first.
NEWER_THAN_2_4 = {
    r"enable_gqa\s*=": "2.5",                 # F.scaled_dot_product_attention(enable_gqa=...)
    r"\btorch\.accelerator\b": "2.6",
    r"\bflex_attention\b": "2.5",
    r"\bsafe_globals\b": "2.5",
    r"\bset_stance\b": "2.6",
}


def test_no_torch_api_newer_than_2_4():
    hits = []
    for folder in ("reference", "judge", "web", "benchmarks", "practice", "problems"):
        for path in (ROOT / folder).rglob("*.py"):
            if "node_modules" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for pattern, since in NEWER_THAN_2_4.items():
                for m in re.finditer(pattern, text):
                    line = text.count("\n", 0, m.start()) + 1
                    hits.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)} (torch {since})")
    assert not hits, "torch >= 2.4 is claimed; these need a newer torch:\n" + "\n".join(hits)
