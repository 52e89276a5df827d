"""An imported (handbook-format) problem's grading time, cold against warm, in one run: the
fixture book's problems (tests/fixtures/handbook_graded/book) imported into a bank of their own,
each one's solution graded `--repeat` times on each path, the two paths taking turns so that the
machine's load of the moment falls on both alike.

    cold  both processes of each suite run (the trusted tests, the submission's) a fresh
          sandboxed interpreter (run_sandboxed)
    warm  both forked from the problem's warm zygote (judge/grading/warm_pool.py); the
          zygote's start (the first warm grading) is timed apart

    .venv/bin/python benchmarks/imported_warm.py [--problems tiny-lru,quick-lru] [--repeat N]
        [--quick]

The reference observations are computed once, before any timing (a cache of the run's own).
Each line says the verdicts of both paths and whether every warm grading was graded warm (a
fallback to cold would make its figure a cold one). --quick: one repetition of tiny-lru (a
test runs it; its figures mean nothing). Prints a table; no asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from judge import grade  # noqa: E402
from judge.authoring.importer import import_problems  # noqa: E402
from judge.grading import warm_pool  # noqa: E402
from judge.grading.reference_cache import ReferenceCache  # noqa: E402
from judge.problem import load_problem  # noqa: E402

BOOK = REPO / "tests" / "fixtures" / "handbook_graded" / "book"


def _bank(root: Path, slugs: list[str]) -> dict:
    res = import_problems([BOOK / s for s in slugs], root / "problems")
    if res.refused:
        raise SystemExit(f"refused: {res.refused}")
    return {i.key.split("/")[1]: load_problem(str(i.folder)) for i in res.imported}


def _timed(problem, source: str, cache, warm: bool):
    with warm_pool.forced(warm):
        t = time.perf_counter()
        report = grade(problem, source, device="cpu", cache=cache)
        return time.perf_counter() - t, report


def _path_of(report) -> str:
    return report.provenance["sandbox_layers"].get("grader_path", "cold")


def measure(problem, source: str, cache, repeat: int) -> dict:
    _timed(problem, source, cache, warm=False)            # the reference, computed once
    start, _ = _timed(problem, source, cache, warm=True)  # the zygote's start
    walls: dict[str, list[float]] = {"cold": [], "warm": []}
    verdicts, paths = set(), set()
    for _ in range(repeat):
        for how in ("cold", "warm"):
            wall, report = _timed(problem, source, cache, warm=how == "warm")
            walls[how].append(wall)
            verdicts.add((how, str(report.verdict)))
            if how == "warm":
                paths.add(_path_of(report))
    warm_pool.close_all()
    return {"cold": statistics.median(walls["cold"]), "warm": statistics.median(walls["warm"]),
            "start": start, "verdicts": sorted(verdicts), "warm graded": ",".join(sorted(paths))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="tiny-lru,quick-lru")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    slugs = ["tiny-lru"] if args.quick else args.problems.split(",")
    repeat = 1 if args.quick else args.repeat
    rows = []
    with tempfile.TemporaryDirectory(prefix="imported-warm-") as tmp:
        bank = _bank(Path(tmp), slugs)
        cache = ReferenceCache(Path(tmp) / "cache")
        for slug in slugs:
            source = (BOOK / slug / "solution.py").read_text(encoding="utf-8")
            rows.append((slug, measure(bank[slug], source, cache, repeat)))
    head = f"{'problem':<12} {'cold s':>8} {'warm s':>8} {'warm / cold':>11} " \
           f"{'zygote start s':>15}  {'warm graded':<11} verdicts"
    print(f"grading an imported problem's solution, median of {repeat} a path")
    print(head)
    print("-" * len(head))
    for slug, m in rows:
        verdicts = " ".join(f"{h}={v}" for h, v in m["verdicts"])
        print(f"{slug:<12} {m['cold']:>8.2f} {m['warm']:>8.2f} {m['warm'] / m['cold']:>11.2f} "
              f"{m['start']:>15.2f}  {m['warm graded']:<11} {verdicts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
