"""`judge check` from the instructor page: one background run per problem, the last result kept
in the data directory (cache/check-<id>.json) so the page can show it after a restart, and beside
the problem (judge.authoring.proof), where a check run from the command line is kept too: the
page shows whichever ran last."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

from judge.authoring import proof
from judge.problem import Problem
from web.settings import Settings

log = logging.getLogger(__name__)


class ProblemChecks:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._running: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def _path(self, problem_id: str) -> Path:
        return self.settings.cache_dir / f"check-{problem_id}.json"

    def status(self, problem: Problem) -> dict | None:
        if problem.id in self._running:
            return {"state": "running"}
        try:
            data = json.loads(self._path(problem.id).read_text())
        except (OSError, ValueError):
            data = None
        beside = proof.read(problem)
        if beside is not None and (data is None or float(beside.get("started_at") or 0) >
                                   float(data.get("started_at") or 0)):
            data = beside
        if data is None:
            return None
        data["current"] = data.get("version") == problem.version
        return data

    def start(self, problem: Problem) -> bool:
        """Start a check unless one runs already; whether one was started."""
        with self._lock:
            if problem.id in self._running:
                return False
            t = threading.Thread(target=self._run, args=(problem,), daemon=True,
                                 name=f"check-{problem.id}")
            self._running[problem.id] = t
            t.start()
            return True

    def _run(self, problem: Problem) -> None:
        started = time.time()
        out: dict = {"state": "done", "started_at": started, "by": "instructor page",
                     "version": problem.version}
        try:
            from judge import check_problem
            out = proof.record(problem, check_problem(problem), started, by="instructor page")
        except Exception as exc:
            log.exception("judge check of problem %s failed", problem.id)
            out.update(ok=False, errors=[f"the check itself failed: {type(exc).__name__}: {exc}"],
                       warnings=[], table=[], seconds=round(time.time() - started, 1))
        path = self._path(problem.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, default=str))
        os.replace(tmp, path)
        with self._lock:
            self._running.pop(problem.id, None)
