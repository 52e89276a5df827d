"""What one request does to an object of this side, and what the guarded (trusted) side refuses:
no `_` names, no changes to functions, classes or modules, no imports."""

from __future__ import annotations

import types

from .capabilities import CALLED, METHODS_BY_KIND
from .classes import del_on_class, make_subclass, set_on_class, set_on_module
from .codec import MAX_TEXT, ProxyRefused
from .metadata import signature_of
from .remote import OPS
from .served import fixed, served_attr
from .wire import WireError, is_ndarray, is_tensor

MAX_NAMES = 10_000
_FIXED = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)


def _name(ep, op: str, target, args) -> str:
    name = args[0] if args else None
    if not isinstance(name, str):
        raise WireError("an attribute without a name")
    if ep.guarded:
        if name.startswith("_"):
            raise ProxyRefused(f"attribute {name!r} of the tests' objects is not "
                               "available to the submission")
        if op in ("setattr", "delattr") and (isinstance(target, _FIXED) or fixed(ep, target)):
            raise ProxyRefused("the tests' functions and classes cannot be changed")
    return name


class _Idle:
    def method(self, *args):
        return None


_IDLE = _Idle()


def perform(ep, op: str, target, args, kwargs):
    """What request `op` does: the operations of no object first (an import, the tests'
    module), then those of `target`, then its dunder operations (remote.OPS)."""
    run = _OF_NO_OBJECT.get(op)
    if run is not None:
        return run(ep, op, target, args, kwargs)
    if target is None:
        raise WireError("a request without its object")
    run = _ON_OBJECT.get(op)
    if run is not None:
        return run(ep, op, target, args, kwargs)
    if op in OPS:
        return getattr(target, op)(*args)
    raise WireError(f"an operation of no known kind {op[:20]!r}")


def _ping(ep, op, target, args, kwargs):
    """time_limit's measure of a request's own cost: a method called, no work."""
    return getattr(_IDLE, "method")(*args, **kwargs)


def _runtime(ep, op, target, args, kwargs):
    """The trusted side only: a public name of a module it serves."""
    if not ep.guarded or len(args) != 2:
        raise ProxyRefused("no module is served from here")
    return served_attr(ep, *args)


def _gensend(ep, op, target, args, kwargs):
    """A generator's next step (served.gen_stub): (done, value), its return value being
    `yield from`'s result over there."""
    if target is None or not isinstance(target, types.GeneratorType):
        raise WireError("a step of something that is not a generator")
    try:
        return False, target.send(args[0] if args else None)
    except StopIteration as stop:
        return True, stop.value


def _import(ep, op, target, args, kwargs):
    """The submission side only: the module's attribute."""
    if ep.guarded:
        raise ProxyRefused("the tests' modules cannot be imported from here")
    return ep.root_getattr(*args)


def _namespace(ep, op, target, args, kwargs):
    """The submission side only: `vars(solution)` of the tests' stand-in."""
    if ep.guarded or ep.root is None:
        raise ProxyRefused("the tests' modules cannot be listed from here")
    return {n: v for n, v in list(vars(ep.root).items())[:MAX_NAMES]
            if isinstance(n, str) and not n.startswith("_") and _crosses(ep, v)}


def _root_set(ep, op, target, args, kwargs):
    """The tests set or delete a name of the student's module."""
    if ep.guarded or ep.root is None:
        raise ProxyRefused("the tests' modules cannot be changed from here")
    return set_on_module(ep, op, _name(ep, op, ep.root, args), args[1:])


def _subclass(ep, op, target, args, kwargs):
    """A class statement of the tests subclassing the student's classes."""
    if ep.guarded:
        raise ProxyRefused("the tests' classes cannot be subclassed from here")
    return make_subclass(ep, *args[:6])


def _call_method(ep, op, target, args, kwargs):
    method = getattr(target, _name(ep, op, target, args))
    if ep.guard is not None and ep.kinds.get(ep.handles.get(id(target))) not in \
            METHODS_BY_KIND and ep.guard.kind(method) not in CALLED:
        # what is called must be something that could have been handed over and called
        raise ProxyRefused(f"{args[0]!r} of the tests' object is not a method the "
                           "submission may call")
    return method(*args[1:], **kwargs)


def _setattr(ep, op, target, args, kwargs):
    if not ep.guarded and isinstance(target, type):
        return set_on_class(ep, target, _name(ep, op, target, args), args[1])
    return setattr(target, _name(ep, op, target, args), args[1])


def _delattr(ep, op, target, args, kwargs):
    if not ep.guarded and isinstance(target, type):
        return del_on_class(ep, target, _name(ep, op, target, args))
    return delattr(target, _name(ep, op, target, args))


def _signature(ep, op, target, args, kwargs):
    """inspect.signature(f) of the submission's f, by the tests (metadata.py)."""
    if ep.guarded:
        raise ProxyRefused("the tests' functions' signatures are not available")
    return signature_of(target)


def _copied(ep, op, target, args, kwargs):
    """copy, deepcopy or the submission's own pickle of its own object, in its process."""
    if ep.guarded:
        raise ProxyRefused("the tests' objects cannot be copied from here")
    import copy
    import pickle
    if op == "pickled":
        return pickle.loads(pickle.dumps(target))
    return copy.copy(target) if op == "copy" else copy.deepcopy(target)


def _setitem(ep, op, target, args, kwargs):
    target[args[0]] = args[1]


def _delitem(ep, op, target, args, kwargs):
    del target[args[0]]


_OF_NO_OBJECT = {
    "ping": _ping, "runtime": _runtime, "gensend": _gensend, "import": _import,
    "namespace": _namespace, "rootset": _root_set, "rootdel": _root_set, "subclass": _subclass,
}


_ATTRIBUTE_DICT = frozenset({"vget", "vset", "vdel", "vkeys"})


def _attribute_dict(ep, op: str, target, args):
    """`obj.__dict__` read or changed from the other side (peertypes.AttributeDict). The
    guarded side answers for a plain object only, and only its public keys: what `getattr`
    and `setattr` of public names would reach, without the object's descriptors."""
    if ep.guarded and isinstance(target, _FIXED):
        raise ProxyRefused("the attributes of the tests' functions and classes are not "
                           "available to the submission")
    try:
        own = vars(target)
    except TypeError:
        raise AttributeError(f"{type(target).__name__!r} object has no attribute "
                             "'__dict__'") from None
    if op == "vkeys":
        return [k for k in own if isinstance(k, str) and not (ep.guarded and k.startswith("_"))]
    key = args[0] if args else None
    if not isinstance(key, str):
        raise WireError("an attribute without a name")
    if ep.guarded and key.startswith("_"):
        raise ProxyRefused(f"attribute {key!r} of the tests' objects is not available to the "
                           "submission")
    if op == "vget":
        return own[key]
    if op == "vset":
        own[key] = args[1]
        return None
    del own[key]
    return None


_ON_OBJECT = {
    "callm": _call_method,
    "getattr": lambda ep, op, target, args, kwargs: getattr(target, _name(ep, op, target, args)),
    "setattr": _setattr, "delattr": _delattr,
    "call": lambda ep, op, target, args, kwargs: target(*args, **kwargs),
    "signature": _signature, "copy": _copied, "deepcopy": _copied, "pickled": _copied,
    **dict.fromkeys(_ATTRIBUTE_DICT, lambda ep, op, target, args, kwargs:
                    _attribute_dict(ep, op, target, args)),
    "iter": lambda ep, op, target, args, kwargs: iter(target),
    "next": lambda ep, op, target, args, kwargs: next(target),
    "len": lambda ep, op, target, args, kwargs: len(target),
    "contains": lambda ep, op, target, args, kwargs: args[0] in target,
    "getitem": lambda ep, op, target, args, kwargs: target[args[0]],
    "setitem": _setitem, "delitem": _delitem,
    "bool": lambda ep, op, target, args, kwargs: bool(target),
    "hash": lambda ep, op, target, args, kwargs: hash(target),
    "repr": lambda ep, op, target, args, kwargs: repr(target)[:MAX_TEXT],
    "str": lambda ep, op, target, args, kwargs: str(target)[:MAX_TEXT],
}


def _crosses(ep, value) -> bool:
    """A module-level value that cannot cross (a string array, a value nested too deep) is left
    out of the listing rather than failing it."""
    try:
        ep.encode(value)
    except (TypeError, ValueError):
        return False
    return True


def is_held(target, name: str, value) -> bool:
    """A list, dict or set stored in the object's own attributes (not made by a property):
    the caller's changes to it are changes to the object."""
    if type(value) not in (list, dict, set):
        return False
    try:
        return vars(target).get(name) is value
    except TypeError:
        return False


def is_lent(target, name: str, value) -> bool:
    """An array or tensor stored in the object's own attributes: the peer's in-place writes to
    it (`o.a[:] = 1`) are writes to the object's."""
    if not (is_ndarray(value) or is_tensor(value)):
        return False
    try:
        return vars(target).get(name) is value
    except TypeError:
        return False
