"""How long the problem page takes to have its Python ready (issue 19): cold and cached.

Starts `python -m web.cli serve` on loopback, opens a problem page in Debian's Chromium
(/usr/bin/chromium, driven by Playwright; nothing is downloaded) and reads the page's own
timings (window.kvpTimings):

- cold: a fresh Chromium profile each run (empty HTTP cache, empty Cache Storage, no compiled
  WebAssembly kept), the page opened once;
- cached: the same profile reloaded once the page has stored its Python snapshot.

For each it prints the median and range of "Python ready" measured from the page's navigation
start (what a student waits; performance.now() when the worker says ready) and inside the worker
(from its first message to ready), when the page started the worker (from navigation start), and
the worker's split of the time. The machine's load average
is printed beside the figures: on the shared 2-core box they move with it.

    .venv/bin/python benchmarks/page_start.py            # 5 cold + 5 cached runs, ~1 min idle
    .venv/bin/python benchmarks/page_start.py --quick    # 1 + 1: only shows that it still runs
    .venv/bin/python benchmarks/page_start.py --no-build-snapshot   # the first visit before issue 19
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FIXTURE = REPO / "tests" / "e2e" / "fixtures" / "problems"
READY = ("() => window.kvpTimings && window.kvpTimings.pythonReadyMs"
         " && !document.querySelector('#run').disabled")
READ = """() => ({page: window.kvpTimings.pythonReadyMs, worker: window.kvpTimings.workerInitMs,
  workerStart: window.kvpTimings.workerStartMs, split: window.kvpTimings.pythonSplit,
  line: document.querySelector('#py-status').innerText})"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _problem() -> tuple[Path | None, str]:
    if (REPO / "problems" / "143-tiered-kv-cache" / "problem.toml").is_file():
        return None, "143"
    return FIXTURE, "901"


class Server:
    def __init__(self, data: Path, problems: Path | None):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "web.cli", "serve", "--host", "127.0.0.1", "--port",
               str(self.port), "--data", str(data), "--workers", "1", "--log-level", "warning"]
        if problems is not None:
            cmd += ["--problems", str(problems)]
        self.log = open(data / "server.log", "w")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONPATH=str(REPO)))
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(self.url + "/api/problems", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    raise SystemExit("the server did not start:\n" + (data / "server.log").read_text())
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# What the page fetched (for its Python too: the sandboxed worker has no network of its own):
# [name, start, end, bytes over the wire], ms from the page's start.
RESOURCES = """() => performance.getEntriesByType('resource').map(
  (e) => [e.name.split('?')[0].split('/').pop(), e.startTime, e.responseEnd, e.transferSize])"""


def one_profile(pw, url: str, profile: Path, no_build_snapshot: bool = False) -> tuple[dict, dict]:
    """(cold, cached) figures of one fresh profile: open the page, wait for its snapshot, reload."""
    ctx = pw.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=FLAGS,
                                                viewport={"width": 1366, "height": 900})
    try:
        if no_build_snapshot:
            # As before the build made one (or with a build whose snapshot is missing).
            ctx.route("**/static/vendor/snapshot/**", lambda route: route.fulfill(status=404, body=""))
        page = ctx.new_page()
        page.goto(url)
        page.wait_for_function(READY, timeout=120_000)
        cold = page.evaluate(READ)
        cold["resources"] = page.evaluate(RESOURCES)
        if not no_build_snapshot:  # a cold start keeps no snapshot: only the build's is kept
            page.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)
        page.reload()
        page.wait_for_function(READY, timeout=120_000)
        cached = page.evaluate(READ)
    finally:
        ctx.close()
    return cold, cached


def _fmt(xs: list[float]) -> str:
    med = statistics.median(xs) / 1000
    return f"{med:.2f} ({min(xs) / 1000:.2f}-{max(xs) / 1000:.2f})"


def _split(rows: list[dict]) -> str:
    keys = [k for k in rows[0]["split"] if k.endswith("_ms") and k != "total_ms"]
    return ", ".join(f"{k[:-3]} {statistics.median(r['split'].get(k, 0) for r in rows) / 1000:.2f}"
                     for k in keys)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one cold and one cached run: checks that "
                   "the script still runs; its figures mean nothing")
    p.add_argument("--runs", type=int, default=5, help="fresh profiles (each: one cold, one cached)")
    p.add_argument("--json", help="also write every run's figures to this file")
    p.add_argument("--no-build-snapshot", action="store_true", help="answer 404 for the build's "
                   "snapshot, so a first visit starts Python cold (the start before issue 19)")
    args = p.parse_args()
    runs = 1 if args.quick else args.runs
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    sys.path.insert(0, str(REPO))
    from web.app import front_end_build
    if not front_end_build()["ok"]:
        subprocess.run(["bash", str(REPO / "scripts/build_frontend.sh")], check=True)
    from playwright.sync_api import sync_playwright

    problems, pid = _problem()
    colds, cacheds, loads = [], [], []
    with tempfile.TemporaryDirectory(prefix="page-start-") as tmp:
        server = Server(Path(tmp), problems)
        try:
            with sync_playwright() as pw:
                for i in range(runs):
                    loads.append(os.getloadavg()[0])
                    cold, cached = one_profile(pw, f"{server.url}/problems/{pid}?lang=en",
                                               Path(tmp) / f"profile-{i}", args.no_build_snapshot)
                    colds.append(cold)
                    cacheds.append(cached)
                    print(f"run {i + 1}: cold {cold['page'] / 1000:.2f} s ({cold['split']['source']}),"
                          f" cached {cached['page'] / 1000:.2f} s ({cached['split']['source']})",
                          flush=True)
        finally:
            server.stop()
    print(f"\nproblem {pid}, {runs} fresh Chromium profile(s); load average (1 min) at each run: "
          + ", ".join(f"{x:.1f}" for x in loads) + f" on {os.cpu_count()} cores")
    print("seconds: median (min-max)\n")
    head = (f"{'start':<8} {'source':<10} {'ready from navigation':>22} {'ready in worker':>18}"
            f" {'worker started':>15}  worker split (medians)")
    print(head)
    print("-" * len(head))
    for name, rows in (("cold", colds), ("cached", cacheds)):
        sources = "/".join(sorted({r["split"]["source"] for r in rows}))
        print(f"{name:<8} {sources:<10} {_fmt([r['page'] for r in rows]):>22} "
              f"{_fmt([r['worker'] for r in rows]):>18} "
              f"{statistics.median(r['workerStart'] for r in rows) / 1000:>15.2f}  {_split(rows)}")
    print("\nwhat the worker fetched on the last cold run (ms from the worker's start):")
    for name, start, end, size in colds[-1]["resources"]:
        print(f"  {name:<48} {start:7.0f} -> {end:7.0f}  {size / 1e6:6.2f} MB")
    print(f"\nthe page's timing line (last cold run): {colds[-1]['line']}")
    print(f"the page's timing line (last cached run): {cacheds[-1]['line']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cold": colds, "cached": cacheds, "load": loads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
