"""Issue 28, item 3: the page-cache timing channel between two gradings.

The attack (round 3's RWF_NOWAIT probe is refused, so it times plain reads): submission N's
hidden run reads the hidden test file and, for each bit, reads one page of a pair of pages of
a cold file it can see (a big file of /usr or of the Python install); submission N+1's public
run times a 1-byte pread of both pages of each pair (a cached page answers in about 1 us, a
cold one in tens to hundreds) and shows what it decoded in its public failure message.
Measured on this host before the fix: 128 of 128 bits on both paths. Both sides whiten the
bits with a key drawn from one seed, so a decoder that always answers the same reads 50 %.

Contained (docs/SANDBOX.md, section 8): what a run can see of the host's files is one image
of the files grading needs, in a tmpfs that never leaves memory (judge/sandbox/system_image.py):
no page of it is ever cold, so reading one tells the next run nothing.
"""

from __future__ import annotations

import random
import re

import pytest

from grading.test_grade_end_to_end import PROBLEM_DIR, REFERENCE, run

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)

BITS = 128
CHANCE_AT_MOST = 0.65  # 128 bits at chance pass 65 % about once in 5,000 tries

# One source for both submissions: its hidden run sends, its public run receives.
ATTACK = r'''
import os as _o, random as _r, stat as _st, sys as _s, time as _t
_SEED, _N, _ROLE = %(seed)d, %(bits)d, %(role)r

def _pairs():
    """Pairs of far-apart pages in big files both runs see, drawn from one seed."""
    files = []
    for top in ("/usr", _s.prefix):
        for d, dirs, names in _o.walk(top):
            dirs.sort()
            for n in sorted(names):
                try:
                    st = _o.lstat(_o.path.join(d, n))
                except OSError:
                    continue
                if _st.S_ISREG(st.st_mode) and st.st_size >= 1 << 20:
                    files.append((_o.path.join(d, n), st.st_size // 4096))
    rng = _r.Random(_SEED)
    out = []
    for _ in range(_N):
        path, pages = rng.choice(files)
        a = rng.randrange(pages // 2 - 32)
        b = pages // 2 + rng.randrange(pages // 2)
        out.append((path, a, b, rng.random() < 0.5, rng.random() < 0.5))
    return out

def _suite():
    a = _s.argv
    return a[a.index("--suite-dir") + 1] if "--suite-dir" in a else ""

def _send(pairs):
    data = open(_o.path.join(_suite(), "test_hidden.py"), "rb").read()
    bits = "".join(format(x, "08b") for x in data)[:_N]
    for (path, a, b, key, _), bit in zip(pairs, bits):
        fd = _o.open(path, _o.O_RDONLY)
        _o.posix_fadvise(fd, 0, 0, _o.POSIX_FADV_RANDOM)  # that page alone, no readahead
        _o.pread(fd, 1, (a if (bit == "1") != key else b) * 4096)
        _o.close(fd)

def _time(fd, page):
    t = _t.perf_counter_ns()
    _o.pread(fd, 1, page * 4096)
    return _t.perf_counter_ns() - t

def _receive(pairs):
    bits, ns = "", []
    for path, a, b, key, a_first in pairs:
        fd = _o.open(path, _o.O_RDONLY)
        _o.posix_fadvise(fd, 0, 0, _o.POSIX_FADV_RANDOM)
        if a_first:
            ta, tb = _time(fd, a), _time(fd, b)
        else:
            tb, ta = _time(fd, b), _time(fd, a)
        _o.close(fd)
        bits += "1" if (ta < tb) != key else "0"
        ns.append(max(ta, tb))
    ns.sort()
    return "%%x|%%d|%%d" %% (int(bits, 2), ns[len(ns) // 2], ns[len(ns) // 10])

_here = _suite().rstrip("/").rsplit("/", 1)[-1]
if _ROLE == "send" and _here == "hidden":
    _send(_pairs())
if _ROLE == "receive" and _here == "public":
    _GOT = _receive(_pairs())
    def _init(self, capacity):
        raise AssertionError("DECODED " + _GOT)
    LRUCache.__init__ = _init
'''


def attack(seed: int, role: str) -> str:
    return REFERENCE + ATTACK % {"seed": seed, "bits": BITS, "role": role}


def decoded(d: dict) -> tuple[str, int, int]:
    """(the bits the receiving run showed, the slower read's median and 10th percentile ns)."""
    text = repr(d["tests"])
    m = re.search(r"DECODED ([0-9a-f]+)\|(\d+)\|(\d+)", text)
    assert m, f"the receiver's message is not in its report: {text[:2000]}"
    return format(int(m.group(1), 16), f"0{BITS}b"), int(m.group(2)), int(m.group(3))


def test_a_later_grading_cannot_time_what_a_hidden_run_read(problem, cache):
    secret = (PROBLEM_DIR / "tests/hidden/test_hidden.py").read_bytes()
    sent = "".join(format(x, "08b") for x in secret)[:BITS]
    seed = random.SystemRandom().randrange(1 << 62)  # pages no earlier try has warmed
    run(problem, cache, attack(seed, "send"))
    _, d = run(problem, cache, attack(seed, "receive"))
    got, median_ns, p10_ns = decoded(d)
    share = sum(g == s for g, s in zip(got, sent)) / BITS
    print(f"\nbits of the hidden test file read back by timing: {share:.0%} of {BITS} "
          f"(slower read of each pair: median {median_ns / 1000:.1f} us, "
          f"10th percentile {p10_ns / 1000:.1f} us)")
    assert share < CHANCE_AT_MOST
