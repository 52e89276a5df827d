"""What the in-memory image of the host's files (judge/sandbox/system_image.py, issue 28 item 3)
costs a grading: grade() of an accepted file of a problem (143 by default) with the image and
with the host's own /usr and Python install, on the cold path and on the warm one, alternated
in one process so the host's load weighs on both alike; and what making the image costs.

    .venv/bin/python benchmarks/resident_view_cost.py [PROBLEM] [--repeat N] [--paths cold,warm]

Needs root and bubblewrap (the image is a tmpfs the judge mounts). Prints a table; no asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from judge import grade  # noqa: E402
from judge.grading import warm_pool  # noqa: E402
from judge.grading.reference_cache import ReferenceCache  # noqa: E402
from judge.problem import ProblemBank  # noqa: E402
from judge.sandbox import probe_layers, system_image  # noqa: E402


def one(problem, source: str, cache, path: str, image: bool) -> float:
    with system_image.used(image), warm_pool.forced(path == "warm"):
        t = time.perf_counter()
        report = grade(problem, source, cache=cache, device="cpu")
        took = time.perf_counter() - t
    layers = report.provenance["sandbox_layers"]
    assert report.verdict == "AC", report.verdict
    assert bool(layers.get("resident_view")) == image, layers.get("resident_view")
    return took


def measure(problem, source: str, cache, path: str, repeat: int) -> dict[bool, list[float]]:
    times: dict[bool, list[float]] = {False: [], True: []}
    for image in (False, True):  # a first grading of each: zygotes started, caches filled
        warm_pool.close_all()
        one(problem, source, cache, path, image)
    for _ in range(repeat):
        for image in (False, True):
            if path == "warm":  # a zygote's view is fixed when it starts
                warm_pool.close_all()
                one(problem, source, cache, path, image)
            times[image].append(one(problem, source, cache, path, image))
    warm_pool.close_all()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", nargs="?", default="143")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paths", default="cold,warm")
    ap.add_argument("--quick", action="store_true", help="141, once, cold only (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.problem, args.repeat, args.paths = "141", 1, "cold"
    problem = next(p for p in ProblemBank().list() if p.name.startswith(args.problem))
    source = problem.submissions("accepted")[0].read_text(encoding="utf-8")
    t = time.perf_counter()
    probe_layers()
    image = system_image.in_use()
    if image is None:
        sys.exit(f"no image here: {system_image.why_not()}")
    with open(os.path.join(image.root, system_image.META)) as f:
        meta = json.load(f)
    print(f"image: {image.bytes / 2**20:.0f} MiB in {meta['files']} files, made in "
          f"{meta['made_s']} s (this start, found or made: {time.perf_counter() - t:.1f} s)")
    cache = ReferenceCache(Path(os.environ.get("TMPDIR", "/tmp")) / "resident-view-refcache")
    print(f"{'path':<6} {'host files (before)':>22} {'image (after)':>16} {'after/before':>13}")
    print("-" * 60)
    for path in args.paths.split(","):
        times = measure(problem, source, cache, path, args.repeat)
        before, after = (statistics.median(times[k]) for k in (False, True))
        print(f"{path:<6} {before:>20.2f} s {after:>14.2f} s {after / before:>12.2f}x   "
              f"(each: {['%.2f' % x for x in times[False]]} / {['%.2f' % x for x in times[True]]}"
              f", load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
