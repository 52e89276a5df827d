"""The tests' warning filters apply in the submission's process, and the warnings the student's
code shows reach the tests' recorders, as in one process (docs/IMPORTED_GRADING.md, "Warning
filters"): llm-swiglu turns `RuntimeWarning` into an error around its call, so a numerically
unstable solution fails there; `pytest.warns` and `catch_warnings(record=True)` see the
student's `warnings.warn`.

- The trusted side sends its `warnings.filters` with a message that lets the submission run (a
  request, an answer to one of the submission's, an `await`: key `wf`) whenever they differ from
  what it last sent. The submission side installs them as its process's filters before its
  code runs on: a warning raised there under "error" is an exception of the student's code, which
  crosses to the test as the exception it is.
- The submission side catches what its warnings machinery *shows* (what the filters let
  through: `warnings._showwarnmsg_impl`, the hook `catch_warnings(record=True)` also replaces)
  per thread, and sends it with its next message on that thread (a request, an answer, the end
  of an `await`: key `w`): category and message as an exception crosses, file and line. The
  trusted side shows each through its own `warnings._showwarnmsg`, so whatever records or
  prints there (pytest's per-test capture, `pytest.warns`, a `catch_warnings(record=True)`)
  gets it. It is not filtered again: the submission's process already applied these filters.

A filter's category crosses by module and qualified name and is looked up, never imported, on
the submission's side among the modules it already has (a builtin warning by name); one it
does not find (a warning class of the tests' own) is left out. What the submission sends is
shown only: a warning is text, a category and a place, never a verdict.
"""

from __future__ import annotations

import builtins
import re
import sys
import warnings

from .wire import WireError

MAX_FILTERS = 1000
MAX_SHOWN = 100      # warnings sent with one message
MAX_TEXT = 300
ACTIONS = frozenset({"error", "ignore", "always", "default", "module", "once"})


# ---- the trusted side -------------------------------------------------------------------------

class Sender:
    def __init__(self):
        self.sent: tuple | None = None

    def attach(self, msg: dict) -> None:
        """Adds the tests' filters to `msg` when they changed since they were last sent."""
        current = tuple(warnings.filters)
        if current == self.sent:  # (a tuple of tuples: identical items compare at once)
            return
        self.sent = current
        msg["wf"] = [f for f in map(_encode_filter, current[:MAX_FILTERS]) if f is not None]


def _encode_filter(f) -> list | None:
    try:
        action, message, category, module, lineno = f
    except (TypeError, ValueError):
        return None
    if not (isinstance(category, type) and issubclass(category, Warning)) or \
            action not in ACTIONS or type(lineno) is not int:
        return None
    patterns = []
    for p in (message, module):
        if p is not None and not isinstance(p, re.Pattern):
            return None
        patterns.append(None if p is None else [p.pattern[:MAX_TEXT], p.flags])
    return [action, patterns[0], [category.__module__, category.__qualname__], patterns[1],
            lineno]


def show(codec, shown) -> None:
    """The submission's shown warnings, shown here."""
    if not isinstance(shown, list) or len(shown) > MAX_SHOWN:
        raise WireError("a malformed list of warnings")
    for item in shown:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], str)
                and type(item[2]) is int):
            raise WireError("a malformed warning")
        w = codec.decode_exc(item[0])
        if isinstance(w, Warning):
            warnings._showwarnmsg(warnings.WarningMessage(  # type: ignore[attr-defined]
                w, type(w), item[1][:MAX_TEXT], item[2]))


# ---- the submission side ----------------------------------------------------------------------

def install(filters) -> None:
    """The tests' filters, as this process's."""
    if not isinstance(filters, list) or len(filters) > MAX_FILTERS:
        raise WireError("malformed warning filters")
    out = []
    for f in filters:
        if not (isinstance(f, list) and len(f) == 5 and f[0] in ACTIONS and type(f[4]) is int):
            raise WireError("a malformed warning filter")
        category = _category(f[2])
        if category is not None:
            out.append((f[0], _pattern(f[1]), category, _pattern(f[3]), f[4]))
    warnings.filters = out
    warnings._filters_mutated()  # type: ignore[attr-defined]  # the modules' "once"/"default" registries start again


def _pattern(p):
    if p is None:
        return None
    if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
            and type(p[1]) is int):
        raise WireError("a malformed warning filter")
    try:
        return re.compile(p[0], p[1])
    except (re.error, ValueError, TypeError):
        raise WireError("a warning filter of no pattern") from None


def _category(spec):
    if not (isinstance(spec, list) and len(spec) == 2 and all(isinstance(x, str) for x in spec)):
        raise WireError("a malformed warning category")
    module, qualname = spec
    obj = builtins if module == "builtins" else sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if not part.startswith("_") else None
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else None


def collect(ep) -> None:
    """What this process's warnings machinery shows is kept per thread, for `drain`."""
    def keep(msg) -> None:
        pending = ep.tl.__dict__.setdefault("warned", [])
        if len(pending) < MAX_SHOWN:
            pending.append(msg)
    warnings._showwarnmsg_impl = keep  # type: ignore[attr-defined]


def drain(ep, msg: dict) -> None:
    """Adds the warnings this thread showed since its last message to `msg`."""
    pending = ep.tl.__dict__.get("warned")
    if not pending:
        return
    ep.tl.warned = []
    msg["w"] = [[ep.encode_exc(_instance(m)), str(m.filename)[:MAX_TEXT],
                 m.lineno if type(m.lineno) is int else 0] for m in pending]


def _instance(m) -> BaseException:
    if isinstance(m.message, Warning):
        return m.message
    try:
        return m.category(str(m.message))
    except Exception:  # noqa: BLE001  a category whose constructor wants more
        return UserWarning(str(m.message))
