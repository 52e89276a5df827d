"""Comparing two observation streams: the first place where the submission's differs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

REL_TOL = ABS_TOL = 1e-6
_MISSING = object()


class _Nothing:
    def __repr__(self) -> str:
        return "nothing"


NOTHING = _Nothing()


@dataclass
class Divergence:
    index: int          # which observation (0-based) in the test
    label: str          # the reference's label for it (the submission's if it has extra ones)
    expected: Any       # the reference's value (None when the submission has an extra one)
    got: Any            # the submission's value (None when it is missing)
    path: str = ""      # where inside the value: "[2]['k']"
    reason: str = "value"  # value | label | missing | extra

    def describe(self) -> str:
        where = f"{self.label}{self.path}"
        if self.reason == "missing":
            return f"observation {self.index + 1} ({self.label!r}) was never recorded"
        if self.reason == "extra":
            return f"observation {self.index + 1} ({self.label!r}) was not expected"
        if self.reason == "label":
            return f"observation {self.index + 1}: expected {self.label!r}, got another label"
        if self.path:
            e, g = value_at(self.expected, self.path), value_at(self.got, self.path)
            return (f"{where}: expected {short(e)}, got {short(g)} "
                    f"(whole value: expected {short(self.expected, 120)}, "
                    f"got {short(self.got, 120)})")
        return f"{where}: expected {short(self.expected)}, got {short(self.got)}"


def value_at(value, path: str):
    """The part of `value` at `path` ("[2]['k']"), or NOTHING where it does not exist."""
    import ast
    for step in path.strip("[]").split("]["):
        try:
            key = ast.literal_eval(step)
            value = value[key]
        except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
            return NOTHING
    return value


def short(value, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def first_difference(expected, got, path: str = "") -> str | None:
    """The path of the first difference between two JSON values, or None if they are equal.
    Floats compare with rel/abs tolerance 1e-6 (an int on either side compares as a number);
    NaN equals NaN; everything else compares exactly (True is not 1)."""
    if _is_number(expected) and _is_number(got):
        if isinstance(expected, float) or isinstance(got, float):
            a, b = float(expected), float(got)
            if math.isnan(a) and math.isnan(b):
                return None
            return None if math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL) else path
        return None if expected == got else path
    if type(expected) is not type(got):
        return path
    if isinstance(expected, list):
        for i, (e, g) in enumerate(zip(expected, got)):
            d = first_difference(e, g, f"{path}[{i}]")
            if d is not None:
                return d
        return None if len(expected) == len(got) else f"{path}[{min(len(expected), len(got))}]"
    if isinstance(expected, dict):
        for k in expected:
            if k not in got:
                return f"{path}[{k!r}]"
            d = first_difference(expected[k], got[k], f"{path}[{k!r}]")
            if d is not None:
                return d
        extra = [k for k in got if k not in expected]
        return f"{path}[{extra[0]!r}]" if extra else None
    return None if expected == got else path


def compare(expected: list[dict], got: list[dict], *, partial: bool = False
            ) -> Divergence | None:
    """expected/got: [{"label": str, "value": json}, ...] in the order recorded.
    partial=True: the test ended early; observations it never reached are not a difference."""
    for i, e in enumerate(expected):
        if i >= len(got):
            if partial:
                return None
            return Divergence(i, e["label"], e["value"], None, reason="missing")
        g = got[i]
        if g.get("label") != e["label"]:
            return Divergence(i, e["label"], e["value"], g.get("value"), reason="label")
        path = first_difference(e["value"], g.get("value", _MISSING))
        if path is not None:
            return Divergence(i, e["label"], e["value"], g.get("value"), path=path)
    if len(got) > len(expected):
        g = got[len(expected)]
        return Divergence(len(expected), str(g.get("label")), None, g.get("value"), reason="extra")
    return None


# ---- pool timelines (runner/trace.py) ---------------------------------------------------------

TRACE_TAIL = 20  # steps of each side kept when the two timelines never differ


def trace_diff(expected: list[dict], got: list[dict]) -> dict:
    """The reference's and the submission's timelines of one test, side by side, up to where
    they part: {"expected": [step...], "got": [step...], "diverges_at": i | None,
    "differs": path | None, "total": {"expected": n, "got": m}}.

    Steps compare as observations do (every key of the step but its number `i`). `diverges_at`
    is the number of the first step that differs, one side lacking a step included; both lists
    then end with it (the shorter may end before it), `differs` says where inside it. When the
    timelines are equal in full (the test failed on something the state does not show, or on an
    assertion), `diverges_at` and `differs` are None and each list holds its last TRACE_TAIL
    steps."""
    total = {"expected": len(expected), "got": len(got)}
    for i in range(max(len(expected), len(got))):
        path: str | None
        if i >= len(expected) or i >= len(got):
            path = ""
        else:
            path = first_difference(_unnumbered(expected[i]), _unnumbered(got[i]))
        if path is not None:
            return {"expected": list(expected[:i + 1]), "got": list(got[:i + 1]),
                    "diverges_at": i, "differs": path, "total": total}
    return {"expected": list(expected[-TRACE_TAIL:]), "got": list(got[-TRACE_TAIL:]),
            "diverges_at": None, "differs": None, "total": total}


def _unnumbered(step) -> Any:
    return {k: v for k, v in step.items() if k != "i"} if isinstance(step, dict) else step


def cut_trace(trace: dict, keep: int) -> None:
    """Keeps the last `keep` steps of each side (the ones nearest where they part)."""
    for side in ("expected", "got"):
        steps = trace.get(side)
        if isinstance(steps, list) and len(steps) > keep:
            trace[side] = steps[len(steps) - keep:] if keep else []
