"""A failing test's two pool timelines (report `failure.trace`, compare.trace_diff) as a compact
text diff for a terminal: one line per call, the pool's state under it, and for the step where
the reference's and the submission's timelines part, both versions with the differing parts
marked (`*`, and red when colored)."""

from __future__ import annotations

import json
import unicodedata
from typing import Callable

from judge.messages import translate

WIDTH = 100


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _text(value) -> str:
    if isinstance(value, list) and all(v is None or isinstance(v, str) for v in value):
        return "[" + ", ".join("-" if v is None else v for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _wrap(items: list[str], indent: int) -> list[str]:
    lines, line = [], ""
    for item in items:
        if line and indent + len(line) + 2 + len(item) > WIDTH:
            lines.append(line)
            line = item
        else:
            line = f"{line}  {item}" if line else item
    return lines + ([line] if line else [])


def call_text(step: dict) -> str:
    """`lookup(A[0] A[1] +3 tokens)`, `allocate(2)`, `free([1, 0])`: one call as the test made it."""
    args = step.get("args")
    parts = []
    for key, value in (args.items() if isinstance(args, dict) else ()):
        if key == "tokens" and isinstance(value, list):
            parts.append(" ".join(str(v) for v in value) or "no tokens")
        else:
            parts.append(_text(value))
    pool = step.get("pool")
    prefix = f"pool {pool}: " if isinstance(pool, int) and pool > 1 else ""
    return f"{prefix}{step.get('op')}({', '.join(parts)})"


def _state_parts(state) -> list[tuple[str, str]]:
    if not isinstance(state, dict):
        return [("state", _text(state))]
    out = []
    for key, value in state.items():
        if key == "counters" and isinstance(value, dict):
            out += [(f"counters.{k}", _text(v)) for k, v in value.items()]
        else:
            out.append((key, _text(value)))
    return out


def _step_lines(step: dict, mark: set[str], paint: Callable[[str], str], indent: int,
                before: dict | None = None) -> list[str]:
    """The call and its result, then the state after it (with `before`, the previous step's
    state parts: only what changed), wrapped; `mark`ed parts are starred and painted."""
    result = "-> " + _text(step.get("result"))
    if "result" in mark:
        result = paint("*" + result)
    state = []
    for key, text in _state_parts(step.get("state")):
        if before is not None and key not in mark and before.get(key) == text:
            continue
        item = f"{key.split('.', 1)[-1]}={text}"
        state.append(paint("*" + item) if key in mark else item)
    if before is not None and not state:
        state = ["(state unchanged)"]
    return [f"{call_text(step)} {result}"] + _wrap(state, indent)


def _differing(e, g) -> set[str]:
    """Which of result / state keys / counters differ between two versions of a step."""
    if not isinstance(e, dict) or not isinstance(g, dict):
        return set()
    out = set()
    if e.get("result") != g.get("result"):
        out.add("result")
    es = dict(_state_parts(e.get("state")))
    gs = dict(_state_parts(g.get("state")))
    out |= {k for k in es.keys() | gs.keys() if es.get(k) != gs.get(k)}
    return out


def trace_lines(trace: dict, *, last: int | None = 4, lang: str = "en",
                paint: Callable[[str], str] = lambda s: s) -> list[str]:
    """The timelines' last `last` steps (all with None) as lines to print, indented by 2."""
    expected_word, got_word = translate("expected", lang), translate("got", lang)
    expected = {s.get("i"): s for s in trace.get("expected") or [] if isinstance(s, dict)}
    got = {s.get("i"): s for s in trace.get("got") or [] if isinstance(s, dict)}
    steps = sorted(i for i in expected.keys() | got.keys() if isinstance(i, int))
    if not steps:
        return []
    shown = steps if last is None else steps[-last:]
    total = max((trace.get("total") or {}).values() or [len(steps)])
    # numbered from 1, as the page's timeline numbers them
    lines = [translate("Pool timeline, steps {first}-{last} of {total} (your code beside the "
                       "reference's)", lang, first=shown[0] + 1, last=shown[-1] + 1, total=total)]
    if len(shown) < len(steps):
        lines.append("  " + translate("{n} earlier steps not shown (--trace shows them all)",
                                      lang, n=len(steps) - len(shown)))
    diverges = trace.get("diverges_at")
    before = None
    pad = max(_width(expected_word), _width(got_word))
    for i in shown:
        e, g = expected.get(i), got.get(i)
        if i != diverges and e is not None and e == g:
            body = _step_lines(e, set(), paint, 8, before)
            lines.append(f"  {i + 1:>4}  {body[0]}")
            lines += [f"        {b}" for b in body[1:]]
            before = dict(_state_parts(e.get("state")))
            continue
        lines.append(paint(f"  >{i + 1:>3}") + "  " + expected_word + " / " + got_word + ":")
        mark = _differing(e, g)
        for name, step in ((expected_word, e), (got_word, g)):
            head = f"        {name}:{' ' * (pad - _width(name))} "
            if step is None:
                lines.append(head + translate("(no such step)", lang))
                continue
            body = _step_lines(step, mark, paint, _width(head), before)
            lines.append(head + body[0])
            lines += [" " * _width(head) + b for b in body[1:]]
        before = dict(_state_parts((e or g or {}).get("state")))
    if diverges is None:
        lines.append(translate("The timelines agree in every step; the failure is in something "
                               "they do not show.", lang))
    else:
        lines.append(translate("They first differ at step {i}, in {where}.", lang, i=diverges + 1,
                               where=trace.get("differs") or "the step"))
    return lines
