"""A submission's progress on a terminal as its events arrive (the server's Server-Sent Events,
the same dicts grade() emits): the queue position while it waits, then one line per finished
test, as the page's live table fills in. Each line is printed whole (no redrawing), so it reads
the same in a log as on a terminal."""

from __future__ import annotations

from judge.cli.console import Console, defang


class LiveLines:
    def __init__(self, con: Console):
        self.con = con
        self.finished: dict[str, str] = {}
        self.position: int | None = None

    def __call__(self, event: dict) -> None:
        event = defang(event)  # the server's words, shown on a terminal: no control characters
        kind = event.get("type")
        if kind in ("queued", "position"):
            pos = event.get("queue_position")
            if isinstance(pos, int) and pos != self.position:
                self.position = pos
                self.con.print(self.con.t("queued: position {n}", n=pos))
        elif kind == "running":
            self.con.print(self.con.t("grading..."))
        elif kind == "requeued":
            self.con.print(self.con.c(self.con.t("the worker stopped; it is graded again"),
                                      "yellow"))
        elif kind == "test_finished":
            self._test(event)

    def _test(self, event: dict) -> None:
        name, verdict = str(event.get("test", ""))[:200], str(event.get("verdict", ""))[:8]
        self.finished[name] = verdict
        t = event.get("time_s")
        took = f"{t:7.3f}s" if isinstance(t, (int, float)) and not isinstance(t, bool) else " " * 8
        self.con.print(f"  {self.con.verdict(verdict.ljust(4))} {took}  {name}")
