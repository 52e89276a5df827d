"""A problem's public tests run from a student's package: the page's runner
(judge/browser/page_run.py) in a child Python, given what the page's Run gives it, so the
verdicts, the first divergence, the pool timeline and the hints are the page's.

The child is this Python (the same flags: a `python -S` parent gets a `-S` child) with the
package's lib/ first on its path and hash randomisation off, as in the page and the sandbox. It
writes its report to a file, not to stdout, so what the student's code prints cannot corrupt it.
It runs your own code with your own rights, as the page's Run does in your browser: the
server's Submit is what grades in a sandbox. A run that does not end within the problem's time
is stopped (TLE), with the page's words.

Package side: the standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_REPORT_BYTES = 32 * 1024 * 1024  # the child's answer is read up to this much
_CHILD = (
    "import sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from judge.browser.page_run import run\n"
    "from judge.judging.bounded import strict_dumps\n"
    "import json\n"
    "spec = json.loads(open(sys.argv[2], encoding='utf-8').read())\n"
    "out = strict_dumps(run(spec))\n"
    "open(sys.argv[3], 'w', encoding='utf-8').write(out)\n"
)


def python_command() -> list[str]:
    """This interpreter with the flags that decide what it may import."""
    cmd = [sys.executable, "-P"]
    if sys.flags.no_site:
        cmd.append("-S")
    if sys.flags.no_user_site:
        cmd.append("-s")
    return cmd


def run_public(spec: dict, lib: Path, timeout_s: float, work: Path) -> dict:
    """The page runner's result for `spec` (a Report's dict, with `unsupported`), or the
    page's TLE when it does not finish within `timeout_s`."""
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="run-") as tmp:
        spec_file, out_file = Path(tmp) / "spec.json", Path(tmp) / "report.json"
        spec_file.write_text(json.dumps(dict(spec, workdir=str(Path(tmp) / "page"))),
                             encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env["PYTHONHASHSEED"] = "0"
        proc = subprocess.Popen([*python_command(), "-c", _CHILD, str(lib), str(spec_file),
                                 str(out_file)], cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            printed, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return timed_out(timeout_s)
        return _answer(out_file, proc.returncode, printed or b"")


def _stop(proc: subprocess.Popen) -> None:
    """The child and whatever it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()
    proc.wait()


def _answer(out_file: Path, code: int | None, printed: bytes) -> dict:
    try:
        if out_file.stat().st_size > MAX_REPORT_BYTES:
            return failed(f"the runner's report is over {MAX_REPORT_BYTES} bytes")
        return json.loads(out_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = printed[-3000:].decode("utf-8", "replace").strip()
        return failed(f"the runner stopped (exit status {code}) before its report"
                      + (f":\n{tail}" if tail else ""))


def timed_out(timeout_s: float) -> dict:
    """The page's answer to a Run that did not finish (web/frontend/src/run_submit.js)."""
    return {"verdict": "TLE", "score": 0.0, "tests": [], "hints": [], "first_failure": {
        "test": None, "verdict": "TLE", "kind": "timeout", "limit_s": timeout_s,
        "message": f"Stopped after {timeout_s:g} s: the code did not finish (an endless "
                   "loop?)."}}


def failed(why: str) -> dict:
    """The runner itself failed: IE, as the page shows "The page's Python failed"."""
    return {"verdict": "IE", "score": 0.0, "tests": [], "hints": [],
            "first_failure": {"test": None, "verdict": "IE", "kind": "internal", "message": why}}
