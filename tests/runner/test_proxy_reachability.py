"""Everything reachable from what the tests hand to a submission is declared (capabilities.py):
the submission walks every attribute, a set of zero-argument methods and the first item of
every iterator reachable from each kind of handle the tests pass (and the frames of its own
stand-in coroutines, which hold handles), and afterwards every object of the trusted side that
became a handle is of a declared kind: no frame, code object, traceback, cell, module, builtin
that runs code or touches the system, descriptor, or runner object, and the walk ran nothing
in the trusted process but the tests' own functions."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import enum
import functools
import itertools
import queue
import re
import threading
import types
from pathlib import Path

import numpy as np
import pytest

WALK = r'''
import collections, inspect, types

CALLS = ("parameters", "modules", "children", "named_parameters", "named_modules", "buffers",
         "iterdir", "get_coro", "get_stack", "get_loop", "keys", "values", "items", "mro",
         "glob", "resolve", "absolute", "cwd", "home")


def _local_frames(x):
    """A coroutine standing here for one of the tests' holds its handle in its frame."""
    if inspect.iscoroutine(x) and x.cr_frame is not None:
        return list(x.cr_frame.f_locals.values())
    return []


def walk(roots, names, budget=80000):
    seen, todo, reached, refused = set(), collections.deque((r, 0) for r in roots), 0, 0
    while todo and budget > 0:
        x, depth = todo.popleft()
        if id(x) in seen or depth > 3:
            continue
        seen.add(id(x))
        reached += 1
        found = _local_frames(x)
        for n in names:
            budget -= 1
            try:
                found.append(getattr(x, n))
            except Exception:
                refused += 1
        for n in CALLS:
            try:
                found.append(getattr(x, n)())
            except Exception:
                refused += 1
        try:
            found.append(next(x))
        except Exception:
            pass
        if isinstance(x, (list, tuple, set, frozenset)):
            found.extend(list(x)[:50])
        if isinstance(x, dict):
            found.extend(list(x.values())[:200])
        todo.extend((f, depth + 1) for f in found if not isinstance(f, (int, float, str, bytes)))
    return reached, refused
'''


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = 1


class Box:
    def __init__(self, secret):
        self._secret, self.items = secret, [1, 2]

    def peek(self):
        return self.items


def _gen():
    secret = "the tests' expected value"  # noqa: F841  (what a frame would show)
    yield 1
    yield 2


async def _coro(i):
    return i


async def _agen():
    yield 1


def _traceback_exc():
    try:
        raise ValueError("boom")
    except ValueError as e:
        return e


def _roots():
    """One object of each kind the handbook's tests hand over."""
    out = [_gen(), _coro, _agen(), asyncio.Queue(), asyncio.Event(), asyncio.Lock(),
           threading.Lock(), threading.Event(), queue.Queue(), Path("/etc"),
           functools.partial(_coro, 1), Box("s").peek, Box, Box("s"), Point(1, 2), Color.RED,
           _traceback_exc(), iter([1, 2]), {"a": 1}.keys(), np.arange(3), itertools.count(),
           len, _gen, range(3), re.compile("a+"), re.match("a", "ab"),
           itertools.product("ab", repeat=2), contextlib.nullcontext(5), object()]
    try:
        import torch
        out.append(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    except ImportError:
        pass
    return out


def _names(roots) -> list[str]:
    """Every public attribute name of the real objects and of their attributes, and the names
    of frames, code and functions an escape reads."""
    names = {"gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "f_builtins", "f_globals",
             "f_locals", "f_back", "tb_frame", "tb_next", "func", "args", "keywords", "im_func",
             "__globals__", "__self__", "__func__", "__traceback__", "__builtins__", "gi_yieldfrom",
             "cr_await", "ag_await", "parent", "_loop", "loop"}
    for r in roots:
        for n in dir(r):
            if not n.startswith("_"):
                names.add(n)
                try:
                    names.update(m for m in dir(getattr(r, n)) if not m.startswith("_"))
                except Exception:
                    pass
    return sorted(names)


_RUNS_CODE = {getattr(builtins, n) for n in (
    "exec", "eval", "compile", "open", "__import__", "getattr", "setattr", "delattr", "globals",
    "locals", "vars", "breakpoint", "input", "print", "help", "memoryview", "super", "type")}
_NEVER = (types.FrameType, types.CodeType, types.TracebackType, types.CellType,
          types.ModuleType, types.MappingProxyType, types.GetSetDescriptorType,
          types.MemberDescriptorType, types.WrapperDescriptorType, types.MethodWrapperType,
          types.MethodDescriptorType)


def test_nothing_of_the_trusted_process_is_reachable_but_what_is_declared(served_endpoint):
    ep = served_endpoint(WALK)
    roots = _roots()
    names = _names(roots)
    assert len(names) > 300
    reached, refused = ep.request("import", None, "walk")(roots, names)
    assert reached > 40 and refused > 1000, (reached, refused)  # the walk walked
    handed = list(ep.objects.values())
    assert len(handed) > 30
    bad = [type(o).__name__ for o in handed if isinstance(o, _NEVER) or
           (isinstance(o, types.BuiltinFunctionType) and o in _RUNS_CODE) or
           ep.guard.kind(o) is None or
           str(getattr(type(o), "__module__", "")).startswith(("judge", "_pytest", "pytest"))]
    assert bad == []
    # nothing ran that could change this process: its builtins and this module are as they were
    assert builtins.exec.__module__ == "builtins" and _gen.__code__.co_name == "_gen"


@pytest.mark.parametrize("reach", [
    "items.gi_frame", "items.gi_code", "items.gi_yieldfrom", "items.send.__self__.gi_frame"])
def test_a_generator_of_the_tests_is_driven_and_answers_no_attribute(served_endpoint, reach):
    ep = served_endpoint("def reach(items):\n"
                         f"    try:\n        return repr({reach})\n"
                         "    except (TypeError, AttributeError):\n        return 'refused'\n"
                         "def total(items):\n    return sum(items)\n")
    assert ep.request("import", None, "reach")(_gen()) == "refused"
    assert ep.request("import", None, "total")(_gen()) == 3
