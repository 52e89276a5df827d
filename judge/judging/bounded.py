"""Bounds on JSON that a submission can influence, applied by the parent before and after parsing.

A submission decides what its observations hold. Parsing one 60 MB line costs the parent
gigabytes; a value nested a thousand levels deep parses, then overflows the recursion of every
later walk over it (comparison, encoding, rendering). So, in the parent:

- a results line longer than `MAX_LINE_BYTES`, or nested deeper than `MAX_DEPTH`, is never parsed:
  the test it belongs to is judged OLE with a message that says which limit it broke;
- a value shown in a report is cut to `MAX_SHOWN_CHARS` of JSON;
- reports are strict JSON: non-finite floats become the strings "NaN", "Infinity", "-Infinity".

The disk a run may fill is bounded here too (`SCRATCH_MB`, `SCRATCH_FILES`; suite_run.py).
"""

from __future__ import annotations

import json
import math
import re

MAX_LINE_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_SHOWN_CHARS = 4000
MAX_REPORT_BYTES = 512 * 1024
# The run's own filesystem on its scratch folder (the tests' tmp_path is in /tmp, capped apart)
SCRATCH_MB = 64
SCRATCH_FILES = 10_000

# Events nest their value a few levels down ({"ev":..., "value": ...}): allowance for that.
_ENVELOPE_DEPTH = 2
_TEST_NAME = re.compile(rb'"test"\s*:\s*"((?:[^"\\]|\\.){1,1000})"')


def nesting_depth(line: bytes, stop_at: int) -> int:
    """How deeply `line` (JSON text) nests arrays and objects, counting only up to `stop_at`:
    a linear scan that skips strings, so it is cheap whatever the line holds."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:      # backslash
                escaped = True
            elif byte == 0x22:      # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest >= stop_at:
                    return deepest
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def line_problem(line: bytes) -> str | None:
    """Why a results line must not be parsed, or None when it may be."""
    if len(line) > MAX_LINE_BYTES:
        return (f"an observation of {len(line):,} bytes: at most {MAX_LINE_BYTES:,} bytes of "
                "JSON per observation")
    if nesting_depth(line, MAX_DEPTH + _ENVELOPE_DEPTH + 1) > MAX_DEPTH + _ENVELOPE_DEPTH:
        return f"an observation nested more than {MAX_DEPTH} levels deep"
    return None


def test_named_in(line: bytes) -> str | None:
    """The test an unparsed line names, read from its first bytes (None if it names none)."""
    m = _TEST_NAME.search(line[:2048])
    if not m:
        return None
    try:
        return json.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return None


def finite(value):
    """`value` with every non-finite float replaced by its JSON5 spelling, as a string."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, list):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    return value


def shown(value, limit: int = MAX_SHOWN_CHARS):
    """`value` as a report may carry it: itself when its JSON is short, else the start of that
    JSON as a string that says it was cut."""
    text = json.dumps(finite(value), ensure_ascii=False, default=str)
    if len(text) <= limit:
        return value
    return f"{text[:limit]} ... (cut: {len(text):,} characters in all)"


def strict_dumps(obj, **kw) -> str:
    """JSON that every parser accepts (no NaN or Infinity literals)."""
    return json.dumps(finite(obj), allow_nan=False, **kw)
