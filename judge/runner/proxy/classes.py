"""What the tests set on a class of the submission's, done as Python does it in one process.

A test that replaces a student's method by its own reference (`Scheduler.schedule = ref`, or
`monkeypatch.setattr`) means a function that binds: `sch.schedule()` calls `ref(sch)`. The
test's function arrives here as a stand-in, which is no descriptor, so it is installed as a
plain local function that calls the stand-in with `self` first; a staticmethod or classmethod
arrives as one (codec "SM"/"CM") around the stand-in. Anything else a test sets on a class (a
value, one of its classes, a bound method, a partial) is set as it is and binds as it would.

This gives the submission nothing it did not have: the stand-in came as the value of the
request, and the submission's code could already call it with any arguments; the installed
function only passes one of the submission's own objects first.
"""

from __future__ import annotations

import types

from .remote import Remote

_MISSING = object()


def as_method(ep, fn: Remote) -> types.FunctionType:
    """One local function per stand-in, so `C.a = f; C.b = f` leaves `C.a is C.b`; encoded,
    it is the test's function again (codec.encode), so `C.pick is ref` holds over there."""
    method = ep.methods.get(fn._hid)
    if method is None:
        def method(self, *args, **kwargs):
            return fn(self, *args, **kwargs)  # type: ignore[operator]  # (a function's: _Callable)
        name = fn._name if fn._name.isidentifier() else "method"
        method.__name__ = method.__qualname__ = name
        ep.methods[fn._hid] = method
        ep.wrapped[method] = fn
    return method


def _read_back(raw, cls: type, value) -> bool:
    """Whether `value` is what reading `cls.name` gave while it held `raw` (a staticmethod or
    classmethod): the test put back what it read before patching."""
    if isinstance(raw, staticmethod):
        return value is raw.__func__
    return (isinstance(value, types.MethodType) and value.__self__ is cls
            and value.__func__ is raw.__func__)


def set_on_module(ep, op: str, name: str, value: list) -> None:
    """`solution.name = value` or `del solution.name` from the tests' side. The tests' module
    stand-in has an empty `__dict__`, so monkeypatch's undo deletes what it set rather than
    putting back the original it never saw there: a name the student's module had before the
    tests first set it is restored by that delete, not removed."""
    module = ep.root
    if name not in ep.module_had:
        ep.module_had[name] = vars(module).get(name, _MISSING)
    if op == "rootset":
        setattr(module, name, value[0])
    elif ep.module_had[name] is not _MISSING:
        setattr(module, name, ep.module_had[name])
    else:
        delattr(module, name)


def set_on_class(ep, cls: type, name: str, value) -> None:
    """`setattr(cls, name, value)` from the tests' side. Reading a staticmethod or classmethod
    across gives its function or bound method, not the descriptor (`__dict__` is not asked
    for), so putting that back (`orig = C.m; ...; C.m = orig`, monkeypatch's undo) restores the
    descriptor the class held rather than a function that would now bind."""
    key = (cls, name)
    if key not in ep.class_had:
        ep.class_had[key] = vars(cls).get(name, _MISSING)
    if key not in ep.displaced:
        raw = vars(cls).get(name, _MISSING)
        if isinstance(raw, (staticmethod, classmethod)):
            ep.displaced[key] = raw
    raw = ep.displaced.get(key)
    if raw is not None and _read_back(raw, cls, value):
        value = raw
    elif isinstance(value, Remote) and value._ep is ep and "f" in value._kinds:
        value = as_method(ep, value)
    setattr(cls, name, value)


def del_on_class(ep, cls: type, name: str) -> None:
    """`delattr(cls, name)` from the tests' side. A class of the submission is a stand-in type
    there (peertypes.py) whose own `__dict__` is not the class's, so monkeypatch's undo of a
    `setattr` deletes what it set rather than putting back the original it never saw: a name
    the class had before the tests first set it is restored by that delete, not removed (as
    `set_on_module` does for the module)."""
    had = ep.class_had.pop((cls, name), None)
    if had is not None and had is not _MISSING:
        setattr(cls, name, had)
    else:
        delattr(cls, name)


def make_subclass(ep, name, bases, body, props, kwargs, meta) -> type:
    """A class statement of the tests' that subclasses classes of the submission's
    (peertypes.RemoteClass): the subclass made here, so the student's `__init_subclass__`,
    registry and `isinstance` see a class of their own. Each function of the test's body is
    installed as a method calling the test's (`as_method`), as setting it on the class would;
    a property's functions the same; values are set as they are. Nothing new reaches the
    submission: the test's functions are handles it could already call with any arguments."""
    if not (isinstance(name, str) and name.isidentifier() and isinstance(bases, list) and bases
            and all(isinstance(b, type) for b in bases) and isinstance(body, dict)
            and isinstance(props, dict) and isinstance(kwargs, dict) and isinstance(meta, dict)
            and all(isinstance(k, str) for d in (body, props, kwargs) for k in d)):
        raise TypeError("a subclass of no classes of this side")
    ns: dict = {}
    for k, v in body.items():
        ns[k] = as_method(ep, v) if isinstance(v, Remote) and v._ep is ep and "f" in v._kinds \
            else v
    for k, parts in props.items():
        if not (isinstance(parts, list) and len(parts) == 3):
            raise TypeError("a malformed property")
        fget, fset, fdel = (as_method(ep, f) if isinstance(f, Remote) and "f" in f._kinds
                            else f for f in parts)
        ns[k] = property(fget, fset, fdel)
    for key, attr in (("module", "__module__"), ("qualname", "__qualname__")):
        if isinstance(meta.get(key), str):
            ns[attr] = meta[key][:200]
    return types.new_class(name, tuple(bases), kwds=kwargs, exec_body=lambda d: d.update(ns))
