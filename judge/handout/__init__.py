"""The student's package: what a class is handed to practise locally without the answer key.

Built on the server (or by `judge pack`) from the problem bank: the runner, `judge.py`, the
statements, the starters, the public tests, the reference's observations of those tests (what the
page's Run judges against) and the handbook modules those tests and the starter import, never a
reference solution, a hidden test, a hidden-only helper or an explanation (audit.py proves it on
every build). Used from the unpacked package by `judge.py`: bundle.py reads a problem there and
local_run.py runs its public tests with the page's own runner (judge/browser/page_run.py).

    needs.py     which handbook modules a problem's public files import (ast)
    contents.py  one problem's files and its problem.json                  (server side)
    audit.py     what must never be in a package, and the search for it    (server side)
    build.py     a package of problems: the runner's files, the manifest, the zip (server side)
    bundle.py    a problem of an unpacked package, as judge.py reads it     (package side)
    local_run.py its public tests in a child Python, as the page runs them  (package side)

The package side imports only the standard library and the browser-safe rooms (judging,
browser, runner, messages), since that is all a package carries.
"""
