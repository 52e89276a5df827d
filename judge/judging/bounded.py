"""Bounds on JSON that a submission can influence, applied by the parent before and after parsing.

A submission decides what its observations hold. Parsing one 60 MB line costs the parent
gigabytes; a value nested a thousand levels deep parses, then overflows the recursion of every
later walk over it (comparison, encoding, rendering). So, in the parent:

- a results line longer than `MAX_LINE_BYTES`, or nested deeper than `MAX_DEPTH`, is never parsed:
  the test it belongs to is judged OLE with a message that says which limit it broke;
- what one run's observations and trace steps keep in the parent is bounded in all, not only
  per line: `MAX_RUN_BYTES` of their lines and `MAX_RUN_VALUES` JSON values (63 lines of 1 MB
  of `{}` each held 3.2 GB of parsed dicts); past either, the test is judged OLE;
- a line still unfinished past `MAX_LINE_BYTES` is dropped there and then, up to its newline
  (kept whole, a 63 MB line trickled in was copied again at every sample);
- a value shown in a report is cut to `MAX_SHOWN_CHARS` of JSON;
- reports are strict JSON: non-finite floats become the strings "NaN", "Infinity", "-Infinity".

The disk a run may fill is bounded here too (`SCRATCH_MB`, `SCRATCH_FILES`; suite_run.py).
"""

from __future__ import annotations

import json
import math
import re

# The runner writes its lines under the same limits it is read by: one source, in the runner
# (judge/ may import it; the runner, copied into the sandbox, imports nothing of judge).
from judge.runner.events import MAX_DEPTH, MAX_LINE_BYTES

# The reference runs of every problem here keep under 150 KB and 20,000 values: ample room.
MAX_RUN_BYTES = 8 << 20
MAX_RUN_VALUES = 250_000   # an empty dict costs the parent 64 bytes + its slot: ~18 MB at most
MAX_SHOWN_CHARS = 4000
MAX_REPORT_BYTES = 512 * 1024
# The run's own filesystem on its scratch folder (the tests' tmp_path is in /tmp, capped apart)
SCRATCH_MB = 64
SCRATCH_FILES = 10_000

# Events nest their value a few levels down ({"ev":..., "value": ...}): allowance for that.
_ENVELOPE_DEPTH = 2
_TEST_NAME = re.compile(rb'"test"\s*:\s*"((?:[^"\\]|\\.){1,1000})"')


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(line: bytes, stop_at: int) -> int:
    """How deeply `line` (JSON text) nests arrays and objects, counting only up to `stop_at`.
    With its strings and everything but brackets taken out and both kinds of bracket made
    one (C speed), each pass that removes the empty pairs removes one level (a Python loop
    over the bytes took 33 ms a megabyte); a rest that is still there after `stop_at` passes
    is that deep, or unbalanced, which the byte scan tells apart."""
    rest = brackets = _STRING.sub(b"", line).translate(_BRACKETS, _NOT_BRACKET)
    for depth in range(stop_at):
        if not rest:
            return depth
        rest = rest.replace(b"[]", b"")
    return _scan_depth(brackets, stop_at) if rest else stop_at


def _scan_depth(line: bytes, stop_at: int) -> int:
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
        return too_long(len(line))
    if nesting_depth(line, MAX_DEPTH + _ENVELOPE_DEPTH + 1) > MAX_DEPTH + _ENVELOPE_DEPTH:
        return f"an observation nested more than {MAX_DEPTH} levels deep"
    return None


def values_in(line: bytes) -> int:
    """An upper bound on the JSON values `line` parses into, from C-speed counts: each value
    but the first is preceded by a comma or opens a container (commas and brackets in strings
    count too, so this errs towards too many)."""
    return 1 + line.count(b",") + line.count(b"[") + line.count(b"{")


def too_long(size: int) -> str:
    return (f"an observation of {size:,} bytes: at most {MAX_LINE_BYTES:,} bytes of JSON per "
            "observation")


def unfinished_problem(size: int) -> str:
    """Why a line dropped before its end arrived was not read."""
    return (f"an observation of more than {size:,} bytes: at most {MAX_LINE_BYTES:,} bytes of "
            "JSON per observation")


def run_problem(kept_bytes: int, kept_values: int) -> str:
    """Why an observation past the whole run's bounds was not kept."""
    return (f"the run's observations hold more than {MAX_RUN_VALUES:,} JSON values or "
            f"{MAX_RUN_BYTES:,} bytes in all (this one would make {kept_values:,} values, "
            f"{kept_bytes:,} bytes)")


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
