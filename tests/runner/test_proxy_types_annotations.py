"""Annotations and the tests' TypedDicts handed to the student's code (judge/runner/proxy/peertypes.py,
docs/IMPORTED_GRADING.md): they cross by value and come back as the test's own; a malformed one from
the peer is its protocol error. The submission side is `judge_runner.proxy.serve` in a plain subprocess;
the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import os

import pytest

from judge.runner.proxy import Endpoint
from judge.runner.proxy.wire import Channel

INSPECTS = """
import typing

def describe(tp):
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return ["typeddict", tp.__name__, sorted(tp.__required_keys__),
                {k: describe(v) for k, v in hints.items()}]
    origin = typing.get_origin(tp)
    if origin is not None:
        return [repr(origin), [describe(a) for a in typing.get_args(tp)]]
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp)

def same(tp):
    return tp
"""


def test_annotations_and_the_tests_typeddicts_cross_by_value(served):
    """The shape of py-validate-typed: the student's code inspects the annotations the test
    hands it (a TypedDict of the test's, nested in a list, Optional, Literal)."""
    from typing import Any, Dict, List, Literal, NotRequired, Optional, TypedDict, Union

    # (the functional form: this file's annotations are strings, `from __future__`)
    Msg = TypedDict("Msg", {"role": Literal["user", "bot"], "text": str})
    Chat = TypedDict("Chat", {"model": str, "messages": list[Msg],  # type: ignore[misc]
                              "temperature": Optional[float], "extra": NotRequired[int]})

    imp = served(INSPECTS)
    describe = imp("describe")
    assert describe(list[int]) == ["<class 'list'>", ["int"]]
    assert describe(int | None) == ["<class 'types.UnionType'>", ["int", "NoneType"]]
    assert describe(Union[int, str]) == ["typing.Union", ["int", "str"]]
    assert describe(tuple[int, ...]) == ["<class 'tuple'>", ["int", "Ellipsis"]]
    assert describe(Dict[str, List[float]]) == ["<class 'dict'>", ["str", ["<class 'list'>",
                                                                          ["float"]]]]
    assert describe(Literal["a", 1]) == ["typing.Literal", ["'a'", "1"]]
    assert describe(Any) in ("Any", "typing.Any")
    msg = ["typeddict", "Msg", ["role", "text"],
           {"role": ["typing.Literal", ["'user'", "'bot'"]], "text": "str"}]
    assert describe(Chat) == ["typeddict", "Chat", ["messages", "model", "temperature"],
                              {"model": "str", "messages": ["<class 'list'>", [msg]],
                               "temperature": ["typing.Union", ["float", "NoneType"]],
                               "extra": "int"}]
    # what crosses back is the test's own: the class itself, the annotation equal
    assert imp("same")(Chat) is Chat and imp("same")(list[Msg]) == list[Msg]
    assert imp("same")(Optional[Msg]) == Optional[Msg]


def test_malformed_annotations_are_the_peers_protocol_error():
    from judge.runner.proxy.wire import WireError
    r, w = os.pipe()
    ep = Endpoint(Channel(r, w), guarded=True)
    for bad in ({"TF": []}, {"TF": ["GA", {"R": 3, "k": "", "n": "x"}, []]},
                {"TF": ["T", "os", []]}, {"TF": ["TD", "x", "A", [], ""]},
                {"TF": ["TD", 4, "A", [["k", 1, "yes"]], ""]}, {"TF": ["nope"]}):
        with pytest.raises(WireError):
            ep.decode(bad)
    os.close(r)
    os.close(w)
