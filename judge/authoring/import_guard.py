"""What `judge import` may read from a folder someone else wrote.

A problem folder is untrusted input: a symbolic link in it (to /etc/shadow, to another problem's
reference or hidden tests) would put the link's target into the bank, and the server serves a
bank's public tests and starters to everyone. So no link is followed, at any depth, and nothing
that resolves outside the folder being imported is read; files are opened with O_NOFOLLOW (the
check and the read cannot be raced by swapping a file for a link), and the number and size of
files are capped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 1 << 20       # one file of a problem (statements, tests, helpers, data)
MAX_PROBLEM_BYTES = 8 << 20    # all the files of one problem folder
MAX_PROBLEM_FILES = 64         # files (at any depth) in one problem folder
MAX_FOLDERS = 5000             # folders walked below one path given to `judge import`


class Unsafe(Exception):
    """The folder holds something `judge import` does not read; the message says what."""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve(strict=True).relative_to(root.resolve(strict=True))
        return True
    except (ValueError, OSError):
        return False


def check_problem_tree(folder: Path) -> None:
    """Raises Unsafe when the problem folder holds a link, a special file, a file that resolves
    outside it, or more or larger files than the caps."""
    folder = Path(folder)
    if folder.is_symlink():
        raise Unsafe(f"{folder} is a symbolic link; links are not followed")
    count = total = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                raise Unsafe(f"{p.relative_to(folder)} is a symbolic link "
                             f"(to {os.readlink(p)}); links are not followed")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise Unsafe(f"{p.relative_to(folder)} is not a plain file")
            if not _inside(p, folder):
                raise Unsafe(f"{p.relative_to(folder)} resolves outside {folder}")
            count += 1
            total += st.st_size
            if st.st_size > MAX_FILE_BYTES:
                raise Unsafe(f"{p.relative_to(folder)} has {st.st_size} bytes, more than the "
                             f"{MAX_FILE_BYTES} a problem's file may have")
            if count > MAX_PROBLEM_FILES:
                raise Unsafe(f"more than {MAX_PROBLEM_FILES} files in the folder")
            if total > MAX_PROBLEM_BYTES:
                raise Unsafe(f"more than {MAX_PROBLEM_BYTES} bytes in the folder")


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, never through a link (O_NOFOLLOW) and never more than `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) |
                     getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise Unsafe(f"{path}: not read ({e.strerror or e}; links are not followed)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unsafe(f"{path} is not a plain file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise Unsafe(f"{path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unsafe(f"{path} has more than {limit} bytes")
    return data


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8")


def is_plain_dir(path: Path) -> bool:
    """A folder to walk into: a real directory, not a link to one."""
    return not path.is_symlink() and path.is_dir()
