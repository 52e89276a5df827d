"""The call proxy's protocol, declared once: its message kinds and their keys, its request ops
and which side may be asked each, its value tags. Both endpoints check every frame against these
tables before anything acts on it (`check_message`), and tests/runner/test_proxy_protocol.py
fails when a kind, op or tag used anywhere in the proxy is not declared here.

Frames are wire.py's (a 4-byte length, then JSON; its caps). A message is a JSON object whose
"t" is a `Kind`:

| kind   | from          | keys (type)                                                       |
|--------|---------------|-------------------------------------------------------------------|
| hello  | submission    | error (object: the import error), once, after `go`                |
| ready  | submission    | (none): up, the student's module not yet imported                 |
| go     | trusted       | (none): import the module now (after time_limit's calibration)    |
| req    | either        | id (int), op (Op), self (int or null), args (list), kw (list of   |
|        |               | [str, value]), sync (list), s (int: a stream), wf, w (list)       |
| res    | either        | id (int), ok (value) or err (object), back (list), sync (list),   |
|        |               | s, wf, w (list)                                                   |
| await  | either        | id (int), self (int), wf (list)                                   |
| done   | either        | id (int), ok (value) or err (object) or cancelled (bool), w       |
| cancel | either        | id (int)                                                          |
| bye    | either        | (none)                                                            |

`wf` (the tests' warning filters) comes from the trusted side only, `w` (the warnings the
submission's code showed) from the submission only (`SENT_BY`; warnfilters.py).

Which side may be asked an op is `SERVED_BY`: the trusted side answers only what the tests'
objects may be asked (capabilities.py narrows it per kind of handle); the submission side
answers what the tests may ask of the student's module and objects. A request for an op the
receiving side does not serve is refused as a protocol error (WireError): it ends the test in
progress as a failure, so a submission that sends the trusted side unsolicited `ping`s, or any
request that side never serves, gains nothing (time_limit counts only the requests the trusted
side sent, never those it served).

Values are the codec's tagged JSON (codec.py); each tag is declared in `TAGS` with the side
that may send it, and a value object must carry exactly one tag of the table (plus that tag's
declared companions): `{"L": [...], "H": 5}` is refused, not read by key precedence.
"""

from __future__ import annotations

from enum import StrEnum

from .wire import WireError


class Kind(StrEnum):
    HELLO = "hello"
    READY = "ready"
    GO = "go"
    REQ = "req"
    RES = "res"
    AWAIT = "await"
    DONE = "done"
    CANCEL = "cancel"
    BYE = "bye"


_UNARY = ("neg", "pos", "abs", "invert", "float", "int", "index", "round", "reversed", "enter")
_BINARY = tuple(f"{p}{n}" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                    "matmul", "and", "or", "xor", "lshift", "rshift")
                for p in ("", "r"))
_ORDER = ("lt", "le", "gt", "ge", "eq", "ne")


class Op(StrEnum):
    # attributes and calls
    GETATTR = "getattr"
    SETATTR = "setattr"
    DELATTR = "delattr"
    CALL = "call"
    CALLM = "callm"
    # containers and iteration
    ITER = "iter"
    NEXT = "next"
    LEN = "len"
    CONTAINS = "contains"
    GETITEM = "getitem"
    SETITEM = "setitem"
    DELITEM = "delitem"
    GENSEND = "gensend"
    # what an object says of itself
    BOOL = "bool"
    HASH = "hash"
    REPR = "repr"
    STR = "str"
    # an object's __dict__ (peertypes.AttributeDict)
    VGET = "vget"
    VSET = "vset"
    VDEL = "vdel"
    VKEYS = "vkeys"
    # the student's module and objects, asked by the tests only
    IMPORT = "import"
    NAMESPACE = "namespace"
    ROOTSET = "rootset"
    ROOTDEL = "rootdel"
    SUBCLASS = "subclass"
    SIGNATURE = "signature"
    COPY = "copy"
    DEEPCOPY = "deepcopy"
    PICKLED = "pickled"
    PING = "ping"               # time_limit's calibration: a request that does nothing
    # a module the trusted side serves (served.py), asked by the submission only
    RUNTIME = "runtime"
    # `await`: a message kind of its own; named here for the capability table
    AWAIT = "await"
    # the number protocol and comparisons, by their dunder names
    NEG, POS, ABS, INVERT, FLOAT, INT, INDEX, ROUND, REVERSED, ENTER = (
        f"__{n}__" for n in _UNARY)
    EXIT = "__exit__"
    LT, LE, GT, GE, EQ, NE = (f"__{n}__" for n in _ORDER)
    ADD, RADD, SUB, RSUB, MUL, RMUL, TRUEDIV, RTRUEDIV, FLOORDIV, RFLOORDIV, MOD, RMOD, POW, \
        RPOW, MATMUL, RMATMUL, AND, RAND, OR, ROR, XOR, RXOR, LSHIFT, RLSHIFT, RSHIFT, \
        RRSHIFT = (f"__{n}__" for n in _BINARY)

    @classmethod
    def dunder_ops(cls) -> list[Op]:
        return [op for op in cls if op.value.startswith("__")]


_BOTH = frozenset(Op) - {Op.AWAIT}
# ops only the tests' side sends: no stand-in of the submission's side ever asks them, so such
# a request from the submission is forged. (signature, copy, deepcopy and pickled are asked by
# the submission's stand-ins of the tests' objects, and the trusted side answers them with a
# refusal, a TypeError the student's code sees, as in operations.py.)
_TESTS_ONLY = frozenset({Op.IMPORT, Op.NAMESPACE, Op.ROOTSET, Op.ROOTDEL, Op.SUBCLASS,
                         Op.PING})
# side -> the ops a request to it may name (`trusted`: asked by the submission)
SERVED_BY = {
    "trusted": _BOTH - _TESTS_ONLY,
    "submission": _BOTH - {Op.RUNTIME},
}
_OPS = frozenset(op.value for op in Op)

# message kind -> {key: accepted Python types of its JSON value}
_INT, _LIST, _DICT, _ANY = (int,), (list,), (dict,), None
KEYS: dict[Kind, dict[str, tuple | None]] = {
    Kind.HELLO: {"error": _DICT},
    Kind.READY: {},
    Kind.GO: {},
    Kind.REQ: {"id": _INT, "op": (str,), "self": (int, type(None)), "args": _LIST,
               "kw": _LIST, "sync": _LIST, "s": _INT, "wf": _LIST, "w": _LIST},
    Kind.RES: {"id": _INT, "ok": _ANY, "err": _DICT, "back": _LIST, "sync": _LIST, "s": _INT,
               "wf": _LIST, "w": _LIST},
    Kind.AWAIT: {"id": _INT, "self": _INT, "wf": _LIST},
    Kind.DONE: {"id": _INT, "ok": _ANY, "err": _DICT, "cancelled": (bool,), "w": _LIST},
    Kind.CANCEL: {"id": _INT},
    Kind.BYE: {},
}
# keys only one side sends (warnfilters.py): the tests' warning filters, the warnings the
# submission's code showed; received from the other side they are undeclared
SENT_BY = {"wf": "trusted", "w": "submission"}
_KINDS = {k.value: k for k in Kind}
_NUMBERED = frozenset({Kind.REQ, Kind.RES, Kind.AWAIT, Kind.DONE, Kind.CANCEL})
_ANY_TYPE: tuple = ()  # (no type is in it: compared by identity below)
# the tables above as the receiving side checks a frame against them, made once (a frame is
# checked on every message): side -> kind value -> {key: types, or _ANY_TYPE}, the keys the
# other side may send only; side -> the op values a request to it may name
_RECEIVED: dict[str, dict[str, dict[str, tuple]]] = {
    side: {k.value: {key: (_ANY_TYPE if types_ is None else types_)
                     for key, types_ in KEYS[k].items() if key != "t" and SENT_BY.get(key) != side}
           for k in Kind}
    for side in SERVED_BY}
_SERVED_VALUES = {side: frozenset(op.value for op in ops) for side, ops in SERVED_BY.items()}


def check_message(m, side: str) -> Kind:
    """The kind of message `m` received by `side` ("trusted" or "submission"), after checking
    its keys and their types, and a request's op against what `side` serves; WireError if
    anything is not declared."""
    if type(m) is not dict:
        raise WireError("a message that is not an object")
    t = m.get("t")
    keys = _RECEIVED[side].get(t) if type(t) is str else None
    if keys is None:
        raise WireError(f"a message of no known type {str(m.get('t'))[:20]!r}")
    kind = _KINDS[t]  # type: ignore[index]  # (t is a str: it named a kind's keys)
    for key, value in m.items():
        types_ = keys.get(key)
        if types_ is None:
            if key == "t":
                continue
            raise WireError(f"a {kind} message with an undeclared key {str(key)[:20]!r}")
        if types_ is not _ANY_TYPE and type(value) not in types_:
            raise WireError(f"a {kind} message whose {key!r} is not a {types_[0].__name__}")
    if kind is Kind.REQ and m.get("op") not in _SERVED_VALUES[side]:
        raise WireError(f"a request for {str(m.get('op'))[:20]!r}, which this side never "
                        "serves")
    if kind in _NUMBERED and "id" not in m:
        raise WireError(f"a {kind} message without its number")
    return kind


# ---- values ---------------------------------------------------------------------------------

# a handle's companions: kinds, name, qualified name, doc, exception base, its class's account
# (t: peertypes.class_info from the submission, testtypes.account from the tests), its class
# (y, ym: methods, yc: the class), an enum member's value
_STANDIN = frozenset({"k", "n", "q", "d", "x", "t", "y", "ym", "yc", "e"})
_NONE: frozenset[str] = frozenset()
_R = frozenset({"r"})
# value tag -> {sending side: the companion keys it may carry}; "both" for either side
TAGS: dict[str, dict[str, frozenset[str]]] = {
    "L": {"submission": _R, "trusted": _NONE},      # list (r: held, remote.HeldList)
    "T": {"both": _NONE},                           # tuple
    "S": {"submission": _R, "trusted": _NONE},      # set
    "F": {"both": _NONE},                           # frozenset
    "D": {"submission": _R, "trusted": _NONE},      # dict, as [key, value] pairs
    "B": {"both": _NONE}, "BA": {"both": _NONE},    # bytes, bytearray
    # ndarray (V: a view, views.py; i, o: its identity, identity.py), tensor (r: lent,
    # borrowed.py)
    "A": {"submission": frozenset({"r", "V", "i", "o"}), "trusted": frozenset({"r", "i", "o"})},
    "X": {"both": frozenset({"r", "i", "o"})},
    "SM": {"both": _NONE}, "CM": {"both": _NONE},   # staticmethod, classmethod of a function
    "H": {"submission": frozenset({"m"}), "trusted": _NONE},  # the receiver's own object
    # a handle of the sender's (remote.py); v: the trusted side's object's plain attributes
    # (snapshots.py)
    "R": {"submission": _STANDIN, "trusted": _STANDIN | {"v"}},
    "P": {"both": _NONE},                           # an answer: the call's own argument
    "TF": {"both": _NONE},                          # a type annotation (typeforms.py)
    "PA": {"both": _NONE},                          # a pathlib path, by value
    # stdvalues.py, npvalues.py
    **{tag: {"both": _NONE} for tag in ("K", "Q", "DEC", "TD", "DA", "DT", "TM", "Y", "SL",
                                        "RG", "TDV", "TDT", "NS", "NT", "ND")},
}


def value_tag(v: dict, sender: str) -> str:
    """The one tag of value object `v` sent by `sender`, its other keys all companions that
    side may send with it; WireError otherwise (no value is read by key precedence)."""
    tag = None
    for key in v:
        if key in TAGS:
            if tag is not None:
                raise WireError("a value with two tags")
            tag = key
    if tag is None:
        raise WireError("a value of no known kind")
    if len(v) > 1:
        spec = TAGS[tag]
        allowed = spec.get("both", spec.get(sender, _NONE))
        if not all(k == tag or k in allowed for k in v):
            raise WireError(f"a {tag!r} value with an undeclared key")
    return tag
