"""The capability guard of the call proxy (judge/runner/proxy/capabilities.py), as the attacks that
got AC through it: a handle to a generator the test passes (`gi_frame`), to a coroutine behind a
factory (`cr_frame`), to `model.parameters()` of a torch module, or to `Path.iterdir()` gave a
frame of the trusted process, whose `f_builtins["exec"]` ran code there that turned every
`check` into a no-op. Each escape must now get exactly what the same wrong answer gets without
it. Fixture book tests/fixtures/handbook_escape/book: problems written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from imported_bank import imported_bank

from judge import grade

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_escape" / "book"
pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)

# code that, run by `exec` in the trusted process, makes every `check` of the tests pass (the
# function's code replaced: the tests' own references to it, already loaded, included)
_PWN = '''
def _pwn(reach):
    code = "import checker; checker.check.__code__ = (lambda *a, **k: None).__code__"
    try:
        reach().f_builtins["exec"](code)
    except Exception:
        pass
'''

# problem -> (a plain wrong answer, the same answer with the escape through what the test passes)
ATTACKS = {
    "stream-total": ("def total(items):\n    return -1\n",
                     "def total(items):\n    _pwn(lambda: items.gi_frame)\n    return -1\n"),
    "fetch-all": ("async def fetch_all(fetch, n):\n    return []\n",
                  # the local coroutine standing for the test's holds its handle
                  "async def fetch_all(fetch, n):\n    c = fetch(0)\n"
                  "    _pwn(lambda: c.cr_frame.f_locals['x'].cr_frame)\n    await c\n"
                  "    return []\n"),
    "count-params": ("def count_params(model):\n    return 0\n",
                     "def count_params(model):\n    g = model.parameters()\n"
                     "    _pwn(lambda: g.gi_frame)\n    return 0\n"),
    "list-files": ("def names(folder):\n    return ['?']\n",
                   "def names(folder):\n    g = folder.iterdir()\n"
                   "    _pwn(lambda: g.gi_frame)\n    return ['?']\n"),
}


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, BOOK, "escape")


def _outcome(report) -> tuple:
    return str(report.verdict), [(t.name, str(t.verdict)) for t in report.tests]


@pytest.mark.parametrize("slug", sorted(ATTACKS))
def test_an_escape_through_what_the_test_passes_changes_nothing(bank, slug):
    if slug == "count-params":
        pytest.importorskip("torch")
    wrong, escape = ATTACKS[slug]
    # the examples are enough: `check` is looked up before the call, but its code is read after
    # the call returns, so an escape made during the call turns that very check into a no-op
    plain = grade(bank[slug], wrong, suite="public")
    attacked = grade(bank[slug], _PWN + escape, suite="public")
    assert str(plain.verdict) == "WA", _outcome(plain)
    assert _outcome(attacked) == _outcome(plain)


@pytest.mark.parametrize("slug", sorted(ATTACKS))
def test_the_handbooks_solution_of_each_is_accepted(bank, slug):
    if slug == "count-params":
        pytest.importorskip("torch")
    r = grade(bank[slug], (BOOK / slug / "solution.py").read_text())
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
