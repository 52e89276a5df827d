"""The call proxy's protocol is declared once (judge/runner/proxy/protocol.py) and enforced on every
frame: a kind, op or value tag used anywhere in the proxy is declared there; a frame with an
undeclared kind, key, op or an ambiguous value is refused before anything acts on it; and a
request the receiving side never serves (the submission's `ping`s, which once bought
time_limit credit) ends the run instead of being answered."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from imported_bank import imported_bank

from judge import grade
from judge.runner.proxy.protocol import KEYS, SERVED_BY, TAGS, Kind, Op, check_message, value_tag
from judge.runner.proxy.wire import WireError

RUNNER = Path(__file__).resolve().parents[2] / "judge" / "runner"
GRADED = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_graded" / "book"


def _sources() -> dict[str, str]:
    return {str(p.relative_to(RUNNER)): p.read_text() for p in RUNNER.rglob("*.py")
            if p.name != "protocol.py"}


def test_every_op_kind_and_tag_the_proxy_uses_is_declared():
    ops = {op.value for op in Op}
    kinds = {k.value for k in Kind}
    used_ops, used_kinds, used_tags = set(), set(), set()
    for text in _sources().values():
        used_ops |= set(re.findall(r'request\(\s*"(\w+)"', text))
        used_ops |= set(re.findall(r'\bop (?:==|!=) "(\w+)"', text))
        for group in re.findall(r'\bop in \(([^)]*)\)', text):
            used_ops |= set(re.findall(r'"(\w+)"', group))
        used_kinds |= set(re.findall(r'"t":\s*"(\w+)"', text))
        used_kinds |= set(re.findall(r'get\("t"\)\s*(?:==|!=)\s*"(\w+)"', text))
        # a value is made as {"TAG": ...}: the tags the encoders write
        used_tags |= set(re.findall(r'\{"([A-Z]{1,3})":', text))
    assert used_ops and used_kinds and used_tags
    assert used_ops <= ops, used_ops - ops
    assert used_kinds <= kinds, used_kinds - kinds
    assert used_tags <= set(TAGS), used_tags - set(TAGS)
    assert set(KEYS) == set(Kind)


@pytest.mark.parametrize("msg, side, why", [
    ({"t": "evil"}, "trusted", "no known type"),
    ([1], "trusted", "not an object"),
    ({"t": "req", "id": 1, "op": "call", "self": None, "args": [], "x": 1}, "trusted",
     "undeclared key"),
    ({"t": "req", "id": "1", "op": "call", "self": None, "args": []}, "trusted", "not a int"),
    ({"t": "req", "id": True, "op": "call", "self": None, "args": []}, "trusted", "not a int"),
    ({"t": "req", "id": 1, "op": "exec", "self": None, "args": []}, "trusted", "never serves"),
    ({"t": "req", "id": 1, "op": "ping", "self": None, "args": []}, "trusted", "never serves"),
    ({"t": "req", "id": 1, "op": "import", "self": None, "args": ["x"]}, "trusted",
     "never serves"),
    ({"t": "req", "id": 1, "op": "runtime", "self": None, "args": []}, "submission",
     "never serves"),
    ({"t": "res", "ok": 1}, "trusted", "without its number"),
    ({"t": "done", "id": 1, "cancelled": 1}, "submission", "not a bool"),
])
def test_undeclared_messages_are_refused(msg, side, why):
    with pytest.raises(WireError, match=why):
        check_message(msg, side)


def test_declared_messages_pass_and_each_side_serves_its_ops():
    assert check_message({"t": "req", "id": 1, "op": "call", "self": 3, "args": [], "kw": []},
                         "trusted") is Kind.REQ
    assert check_message({"t": "req", "id": 1, "op": "ping", "self": None, "args": [1, -1]},
                         "submission") is Kind.REQ
    assert Op.PING not in SERVED_BY["trusted"] and Op.RUNTIME not in SERVED_BY["submission"]


@pytest.mark.parametrize("value", [{"L": [1], "H": 5}, {"D": [], "A": {}}, {"Q": [1, 2], "r": 1},
                                   {"R": 1, "zz": 2}, {"zz": 1}])
def test_a_value_is_one_declared_tag_never_read_by_key_precedence(value):
    with pytest.raises(WireError):
        value_tag(value, "submission")


def test_companions_are_the_senders_own():
    assert value_tag({"L": [1], "r": 2}, "submission") == "L"  # a held list of the student's
    with pytest.raises(WireError):
        value_tag({"L": [1], "r": 2}, "trusted")
    with pytest.raises(WireError):
        value_tag({"H": 1, "m": "get"}, "trusted")  # only the tests name the peer's methods


def test_the_submission_cannot_ping_the_trusted_side(served_endpoint):
    ep = served_endpoint("import gc\n"
                         "def ping_them():\n"
                         "    ep = next(o for o in gc.get_objects()\n"
                         "              if type(o).__name__ == 'Endpoint')\n"
                         "    return ep.request('ping', None, 1, -1)\n")
    sent = ep.calls
    with pytest.raises(WireError, match="never serves"):
        ep.request("import", None, "ping_them")()
    assert ep.calls == sent + 2  # its own two requests; nothing it was sent is counted


# ---- graded: the flood of pings that bought time_limit credit --------------------------------

# TinyLRU(100) is timed in test_many_operations (`time_limit(0.5)`): the handbook's solution,
# but its first put of that cache burns 0.7 s of CPU there, then calls flood()
_SOLUTION = (GRADED / "tiny-lru" / "solution.py").read_text(encoding="utf-8")
BURN = "import time\n" + _SOLUTION.replace(
    "    def put(self, key, value):\n",
    "    def put(self, key, value):\n"
    "        if self.capacity == 100 and not getattr(self, 'burnt', False):\n"
    "            self.burnt = True\n"
    "            t = time.process_time()\n"
    "            while time.process_time() - t < 0.7:\n"
    "                pass\n"
    "            flood()\n", 1)
assert "flood()" in BURN
NO_FLOOD = BURN + "\ndef flood():\n    pass\n"
# 20,000 pings, written as raw frames (cheap), their answers read back
FLOOD = BURN + '''
import gc, json, os, struct


def flood():
    ep = next(o for o in gc.get_objects() if type(o).__name__ == "Endpoint")
    body = json.dumps({"t": "req", "id": 10 ** 9, "op": "ping", "self": None,
                       "args": []}).encode()
    batch = (struct.pack(">II", len(body), 0) + body) * 200  # (no attachments)
    for _ in range(100):
        os.write(ep.ch.fd_out, batch)
        for _ in range(200):
            ep.ch.recv()
'''


@pytest.fixture(scope="module")
def graded_bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, GRADED, "graded-protocol")


@pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)
def test_pings_from_the_submission_buy_no_time_limit_credit(graded_bank):
    lru = graded_bank["tiny-lru"]
    plain = {t.name: str(t.verdict) for t in grade(lru, NO_FLOOD).tests}
    flooded = {t.name: str(t.verdict) for t in grade(lru, FLOOD).tests}
    timed = next(n for n in plain if n.endswith("test_many_operations"))
    assert plain[timed] == "WA", plain        # time_limit fails the block: the burn is over
    assert flooded[timed] != "AC", flooded    # and no flood makes it fit
