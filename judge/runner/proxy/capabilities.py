"""What of the trusted process the submission may hold, and what each thing it holds answers: the
capability guard of the call proxy, an allow-list (docs/IMPORTED_GRADING.md, "The capability
guard"; the op names are protocol.Op).

Every object of the trusted side becomes a handle here or not at all (`admit`, called by the
codec's `export` on the guarded side), and every request about a handle is checked against its
kind (`allowed`) before `operations.perform` touches the object. A kind is decided by the
object's type, never by its name or by anything the submission sends:

- the tests' own objects, classes and functions (defined in the suite's files, in the handbook
  modules mounted beside them, or in a module the trusted side serves) and instances of a short
  table of library classes that hold no execution state (locks, queues, events, torch modules,
  random generators), and a bare `object()` (a sentinel; never the class `object`): attributes
  by public name, calls, the container and number protocols;
- generators, coroutines and async generators: driven (next, send, throw, close, await), with
  no attribute at all (`gi_frame`, `cr_frame`, `ag_frame`, `gi_code` are attributes);
- bound methods, `functools.partial` and a few pure builtins (`len`, `math.sqrt`): called, and
  nothing else (no `__self__`, `func`, `args`);
- iterators of builtin containers and dict views: iterated, measured.

Everything else is refused where it would cross: frames, code objects, tracebacks, cells,
modules, builtin functions such as `exec` or `open`, mapping proxies, the runner's own objects,
any library object outside the table (an event loop's `subprocess_exec`, a logger's manager).
Since each answer is admitted again before it crosses, an attribute chain cannot walk out of
what is declared here: a handle answers what its kind declares, and what it answers is a value,
or a handle of a kind declared here."""

from __future__ import annotations

import builtins
import collections
import functools
import itertools
import os
import queue
import sys
import threading
import types
from enum import Enum, StrEnum

from .protocol import Op

# the handbook modules' folder in the trusted sandbox (grading/child_env.py sets it)
HANDBOOK_DIR_ENV = "JUDGE_HANDBOOK_DIR"


class Kind(StrEnum):
    OBJECT = "object"            # an instance of the tests' classes or of a declared library class
    CLASS = "class"              # a class of the tests (or a declared library class)
    FUNCTION = "function"        # a Python function of the tests
    CALLABLE = "callable"        # a bound method, a partial, a pure builtin: called only
    GENERATOR = "generator"
    COROUTINE = "coroutine"      # coroutines and the awaitables of async generators' steps
    ASYNC_GENERATOR = "async_generator"
    ITERATOR = "iterator"        # builtin iterators and dict views
    MEMBER = "member"            # an enum member


_DESCRIBE = frozenset({Op.REPR, Op.STR, Op.HASH, Op.BOOL})
_COMPARE = frozenset(Op.dunder_ops())
_CONTAINER = frozenset({Op.ITER, Op.NEXT, Op.LEN, Op.CONTAINS, Op.GETITEM, Op.SETITEM,
                        Op.DELITEM})
_ATTRIBUTES = frozenset({Op.GETATTR, Op.SETATTR, Op.DELATTR, Op.CALLM, Op.VGET, Op.VSET, Op.VDEL,
                         Op.VKEYS})

OPS_BY_KIND: dict[Kind, frozenset] = {
    Kind.OBJECT: _DESCRIBE | _COMPARE | _CONTAINER | _ATTRIBUTES | {Op.CALL, Op.AWAIT},
    Kind.MEMBER: _DESCRIBE | _COMPARE | {Op.GETATTR, Op.CALLM},
    Kind.CLASS: _DESCRIBE | _COMPARE | _CONTAINER | {Op.GETATTR, Op.CALLM, Op.CALL},
    Kind.FUNCTION: _DESCRIBE | _COMPARE | {Op.CALL, Op.GETATTR},
    Kind.CALLABLE: _DESCRIBE | _COMPARE | {Op.CALL},
    Kind.GENERATOR: _DESCRIBE | {Op.ITER, Op.NEXT, Op.GENSEND, Op.CALLM},
    Kind.COROUTINE: _DESCRIBE | {Op.AWAIT, Op.CALLM},
    Kind.ASYNC_GENERATOR: _DESCRIBE | {Op.CALLM},
    Kind.ITERATOR: _DESCRIBE | {Op.ITER, Op.NEXT, Op.LEN, Op.CONTAINS},
}
# the only methods `callm` may name on a kind that has no attributes
METHODS_BY_KIND: dict[Kind, frozenset[str]] = {
    Kind.GENERATOR: frozenset({"send", "throw", "close"}),
    Kind.COROUTINE: frozenset({"send", "throw", "close"}),
    Kind.ASYNC_GENERATOR: frozenset({"asend", "athrow", "aclose"}),
}


def _types_of(*makers) -> tuple[type, ...]:
    return tuple({type(m()) for m in makers})


_ITERATORS = _types_of(
    lambda: iter([]), lambda: iter(()), lambda: iter(range(0)), lambda: iter(""),
    lambda: iter(b""), lambda: iter(bytearray()), lambda: iter(set()), lambda: iter({}),
    lambda: iter({}.values()), lambda: iter({}.items()), lambda: reversed([]),
    lambda: reversed(range(0)), lambda: {}.keys(), lambda: {}.values(), lambda: {}.items(),
    lambda: enumerate(()), lambda: zip(), lambda: map(abs, ()), lambda: filter(None, ()),
    lambda: itertools.count(), lambda: itertools.islice((), 0), lambda: itertools.chain(),
    lambda: itertools.cycle(()), lambda: itertools.repeat(0), lambda: iter(lambda: 0, 0),
    lambda: itertools.product(), lambda: itertools.permutations(()),
    lambda: itertools.combinations((), 0), lambda: itertools.combinations_with_replacement((), 0),
    lambda: itertools.accumulate(()), lambda: itertools.groupby(()),
    lambda: itertools.starmap(abs, ()), lambda: itertools.takewhile(bool, ()),
    lambda: itertools.dropwhile(bool, ()), lambda: itertools.zip_longest(()),
    lambda: itertools.pairwise(()), lambda: itertools.compress((), ()),
    lambda: itertools.filterfalse(None, ()), lambda: reversed({}),
    lambda: iter(frozenset()), lambda: iter(collections.deque()))


async def _agen():
    yield None


_COROUTINE_STEPS = _types_of(lambda: _agen().asend(None), lambda: _agen().athrow(ValueError),
                             lambda: _agen().aclose())

# library classes whose instances hold no execution state and reach nothing of the system by
# a public name: what the handbook's tests hand to a submission (a lock, a queue, an event, a
# random generator). Looked up by type, exactly (a subclass is the tests' own or nothing).
_LIBRARY_CLASSES: tuple[type, ...] = (
    type(threading.Lock()), type(threading.RLock()), threading.Event, threading.Condition,
    threading.Semaphore, threading.BoundedSemaphore, threading.Barrier,
    queue.Queue, queue.LifoQueue, queue.PriorityQueue, queue.SimpleQueue,
    collections.deque, collections.OrderedDict, collections.defaultdict, collections.Counter,
    collections.ChainMap, types.SimpleNamespace, functools.partial)
# by module and name, when that module is imported (never imported here)
_LIBRARY_NAMES = {
    "asyncio.queues": ("Queue", "LifoQueue", "PriorityQueue"),
    "asyncio.locks": ("Lock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "Barrier"),
    "asyncio.futures": ("Future",), "_asyncio": ("Future", "Task"), "asyncio.tasks": ("Task",),
    "io": ("StringIO", "BytesIO"), "random": ("Random",), "re": ("Pattern", "Match"),
    "contextlib": ("nullcontext", "_GeneratorContextManager", "_AsyncGeneratorContextManager",
                   "ExitStack", "AsyncExitStack"),
    "numpy.random._generator": ("Generator",), "numpy.random.mtrand": ("RandomState",),
}
# library bases whose every subclass is a container of tensors and functions (a model)
# (and numpy's dtypes and scalar types, which describe numbers)
_LIBRARY_BASES = (("torch.nn.modules.module", "Module"), ("torch.optim.optimizer", "Optimizer"),
                  ("numpy", "dtype"), ("numpy", "generic"))
# functions of the library that compute and touch nothing: a test may pass them as callbacks
_PURE_MODULES = {"builtins": frozenset({
    "abs", "all", "any", "ascii", "bin", "callable", "chr", "divmod", "format", "hash", "hex",
    "isinstance", "issubclass", "len", "max", "min", "oct", "ord", "pow", "repr", "round",
    "sorted", "sum"}),
    "math": None, "time": frozenset({"sleep", "monotonic", "perf_counter", "time",
                                     "process_time"}),
    "asyncio.tasks": frozenset({"sleep"})}


def _library_class(cls: type) -> bool:
    if cls in _LIBRARY_CLASSES:
        return True
    for module, names in _LIBRARY_NAMES.items():
        mod = sys.modules.get(module)
        if mod is not None and any(getattr(mod, n, None) is cls for n in names):
            return True
    for module, name in _LIBRARY_BASES:
        base = getattr(sys.modules.get(module), name, None)
        if isinstance(base, type) and issubclass(cls, base):
            return True
    return False


def _pure(fn) -> bool:
    module = getattr(fn, "__module__", None)
    if module is None and isinstance(fn, types.BuiltinFunctionType):
        module = getattr(getattr(fn, "__self__", None), "__name__", None)
    if module not in _PURE_MODULES:
        return False
    names = _PURE_MODULES[module]
    mod = builtins if module == "builtins" else sys.modules.get(module)
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or (names is not None and name not in names):
        return False
    return getattr(mod, name, None) is fn and (module != "math" or callable(fn))


class Guard:
    """The trusted side's capability guard: which modules are the tests' own."""

    def __init__(self, roots: tuple[str, ...] = (), modules: tuple[str, ...] = ()):
        self.roots = tuple(os.path.realpath(r) + os.sep for r in roots if r)
        self.modules = frozenset(modules)
        self._own: dict[str, bool] = {}

    def own_module(self, name) -> bool:
        """A module of the tests: one of the served or handbook modules by name, or one whose
        file is inside the suite's or the handbook's folder."""
        if not isinstance(name, str):
            return False
        known = self._own.get(name)
        if known is None:
            mod = sys.modules.get(name)
            path = getattr(mod, "__file__", None) if mod is not None else None
            known = name in self.modules or (
                isinstance(path, str) and os.path.realpath(path).startswith(self.roots))
            self._own[name] = known
        return known

    def own_class(self, cls: type) -> bool:
        return self.own_module(cls.__dict__.get("__module__", None)) or _library_class(cls)

    def kind(self, v) -> Kind | None:
        """The kind of handle `v` may be for the submission, or None: it does not cross."""
        t = type(v)
        if t is types.GeneratorType:
            return Kind.GENERATOR
        if t is types.CoroutineType or t in _COROUTINE_STEPS:
            return Kind.COROUTINE
        if t is types.AsyncGeneratorType:
            return Kind.ASYNC_GENERATOR
        if t in _ITERATORS:
            return Kind.ITERATOR
        if t is types.FunctionType:
            return Kind.FUNCTION if self.own_module(v.__module__) or _pure(v) else None
        if t is types.MethodType:  # the method of a held object or class is what it answers
            return Kind.CALLABLE if self.kind(v.__self__) in _HOLDERS else None
        if t is types.BuiltinFunctionType or t is types.BuiltinMethodType:
            return self._builtin(v)
        if t is functools.partial:
            func = v.func
            builtin_class = isinstance(func, type) and func.__module__ == "builtins"
            return Kind.CALLABLE if builtin_class or self.kind(func) in CALLED else None
        if isinstance(v, type):
            if self.own_class(v):
                return Kind.CLASS
            # an exception's class crosses with it (raises(...), except): made, nothing else
            return Kind.CALLABLE if issubclass(v, BaseException) else None
        if isinstance(v, Enum):
            return Kind.MEMBER if self.own_class(t) or t.__module__ in _ENUM_MODULES else None
        if isinstance(v, _NEVER):
            return None
        if isinstance(v, BaseException):  # its args and notes; its traceback is a dunder
            return Kind.OBJECT
        if t is object:  # a bare sentinel (`MISSING = object()`): no state, no public name
            return Kind.OBJECT
        return Kind.OBJECT if self.own_class(t) else None

    def _builtin(self, v) -> Kind | None:
        owner = getattr(v, "__self__", None)
        if owner is None or isinstance(owner, types.ModuleType):
            return Kind.CALLABLE if _pure(v) else None
        # a method of an object that may itself be held (`lock.acquire`, `q.put_nowait`), or
        # of the tests' container (`sink.append` as a callback); never of a string, whose
        # `format` reads attributes (`"{0.gi_frame}".format(g)`)
        if type(owner) in _CONTAINERS:
            return Kind.CALLABLE
        return Kind.CALLABLE if self.kind(owner) in _HOLDERS else None


_CONTAINERS = (list, dict, set, bytearray)
_HOLDERS = (Kind.OBJECT, Kind.CLASS, Kind.MEMBER)
CALLED = (Kind.FUNCTION, Kind.CALLABLE, Kind.CLASS)
_ENUM_MODULES = frozenset({"enum", "http", "signal", "re", "inspect"})
# never a handle, whatever a table above says: execution state and the system
_NEVER = (types.FrameType, types.CodeType, types.TracebackType, types.CellType,
          types.ModuleType, types.MappingProxyType, types.GetSetDescriptorType,
          types.MemberDescriptorType, types.WrapperDescriptorType, types.MethodWrapperType,
          types.MethodDescriptorType, types.ClassMethodDescriptorType)


def allowed(kind: Kind, op: str, args) -> bool:
    """Whether a handle of `kind` answers request `op` (with `args`): the declared table."""
    if op not in OPS_BY_KIND[kind]:
        return False
    names = METHODS_BY_KIND.get(kind)
    if names is not None and op == Op.CALLM:
        return bool(args) and args[0] in names
    return True


__all__ = ["Guard", "Kind", "OPS_BY_KIND", "METHODS_BY_KIND", "CALLED", "allowed",
           "HANDBOOK_DIR_ENV"]
