"""Runtime modules the trusted side serves (docs/IMPORTED_GRADING.md): the handbook's `gpusim`
is imported by the test AND by the solution, and its launches keep their accounting (and the
test's spies on `gs.launch`) in module state. So there is one copy, in the trusted process: the
submission's `import gpusim` gives a stand-in module whose attributes are handles of the trusted
process's module (`ServedModule`), so `gs.launch(kernel, ...)` runs the launch, its accounting
and the test's spies there, calling the student's kernel back across the proxy.

What the submission can reach: the public names the module itself defines (its functions,
classes and plain values; never a module it imported, `np` or `math`, never a `_` name), which
is what any test's object handed over gives (calls, public attributes read). The served module's
objects (a kernel's thread `t`, device arrays, stats) cannot have attributes set or deleted from
the submission (a kernel has no reason to, and `t.log = []` would empty the access log the
accounting reads); their items (`x[i] = v`) are set as the simulator counts them.

The student's kernel is usually a generator function (`yield t.syncthreads()`): the simulator
tells one with `inspect.isgeneratorfunction` and drives it with `send`. A handle of a generator
function of the submission is, on the trusted side, a real local generator function (`gen_stub`)
whose generator drives the submission's one, one request per step (`gensend`).
"""

from __future__ import annotations

import importlib
import os
import types

from .codec import ProxyRefused
from .wire import WireError

ENV = "JUDGE_SERVED_MODULES"          # comma-separated module names, set by the grader
_PLAIN = (int, float, str, bool, type(None), tuple, frozenset)


def served_names() -> tuple[str, ...]:
    raw = os.environ.get(ENV, "")
    return tuple(n for n in raw.split(",") if n.isidentifier())


# ---- the trusted side -----------------------------------------------------------------------

def served_attr(ep, module: str, name: str):
    if module not in ep.served:
        raise ProxyRefused(f"module {module!r} is not served to the submission")
    if not isinstance(name, str) or name.startswith("_"):
        raise ProxyRefused(f"attribute {name!r} of {module} is not available to the submission")
    mod = importlib.import_module(module)
    try:
        value = getattr(mod, name)
    except AttributeError:
        raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
    if isinstance(value, types.ModuleType):
        raise ProxyRefused(f"{module}.{name} is a module: not available to the submission")
    if isinstance(value, _PLAIN):
        return value
    own = value if isinstance(value, (type, types.FunctionType)) else type(value)
    if getattr(own, "__module__", None) != module:
        raise ProxyRefused(f"{module}.{name} is not defined by {module}")
    return value


def fixed(ep, target) -> bool:
    """An object of a served module: its attributes are not set from the submission."""
    return bool(ep.served) and getattr(type(target), "__module__", None) in ep.served


def gen_stub(r):
    """A local generator function standing for the submission's generator function `r`."""
    ep = r._ep

    def stub(*args, **kwargs):
        g = r(*args, **kwargs)
        value = None
        while True:
            step = ep.request("gensend", g._hid, value)
            if type(step) is not tuple or len(step) != 2:
                raise WireError("a malformed generator step")
            done, op = step
            if done:
                return op  # `s = yield from warp_sum(t, v)`: the student's return value
            value = yield op

    stub.__name__ = stub.__qualname__ = r._name
    # crosses back as the peer's own function (codec.encode)
    stub._served_remote = r  # type: ignore[attr-defined]
    return stub


# ---- the submission side --------------------------------------------------------------------

class ServedModule(types.ModuleType):
    """`import gpusim` in the submission's process: each attribute read asks the trusted side
    (so `gs.launch`, replaced there by a test's spy, is the spy here too). What the submission
    sets on it stays here."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        ep = self.__dict__.get("_served_ep")
        if ep is None:
            raise AttributeError(name)
        return ep.request("runtime", None, self.__name__, name)


def install(ep, names) -> None:
    import sys

    for name in names:
        if name in sys.modules:
            # imported already by an install step (tritonkit's minitl): that process's own
            continue
        mod = ServedModule(name)
        mod.__dict__["_served_ep"] = ep
        sys.modules[name] = mod
