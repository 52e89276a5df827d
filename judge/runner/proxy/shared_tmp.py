"""The temporary folder the two processes of an imported problem's grading share
(docs/IMPORTED_GRADING.md): a test makes `tempfile.mkdtemp()`, the submission writes a file
there, the test reads it back, as in one process.

The grader binds one folder, writable, into both sandboxes and names it in JUDGE_SHARED_TMP
(and TMPDIR). The two processes run as two different uids, and `tempfile` makes its folders
0700 and its files 0600, so each side here opens what `tempfile` and plain `open`/`mkdir`
make in it to the other side (umask 0; `mkdtemp` folders 0777, `mkstemp` files 0666). Only
these two processes see the folder (it is bound into no other sandbox): it holds what the
test and the submission write there, never the tests' files, which are mounted read-only
elsewhere and only in the trusted sandbox.
"""

from __future__ import annotations

import os
import tempfile

ENV = "JUDGE_SHARED_TMP"


def share() -> str | None:
    """Called first thing by both processes: the shared folder, or None when there is none."""
    path = os.environ.get(ENV)
    if not path or not os.path.isdir(path):
        return None
    tempfile.tempdir = path
    os.umask(0)
    mkdtemp, mkstemp_inner = tempfile.mkdtemp, tempfile._mkstemp_inner  # type: ignore[attr-defined]

    def shared_mkdtemp(*args, **kwargs):
        out = mkdtemp(*args, **kwargs)
        _open_up(out, 0o777)
        return out

    def shared_mkstemp_inner(*args, **kwargs):
        fd, name = mkstemp_inner(*args, **kwargs)
        _open_up(name, 0o666)
        return fd, name

    tempfile.mkdtemp = shared_mkdtemp
    # NamedTemporaryFile, TemporaryFile and mkstemp all make their file here
    tempfile._mkstemp_inner = shared_mkstemp_inner  # type: ignore[attr-defined]
    return path


def _open_up(path, mode: int) -> None:
    try:
        os.chmod(path, mode)
    except OSError:
        pass
