"""A C++ submission is run by the same sandbox as a Python one (judge/grading/cpp/execute.py
through run_sandboxed): each escape the Python sandbox tests try (tests/sandbox/test_sandbox.py)
tried here from C++, inside a graded case.

How each is observed: the submission is the reference solution whose get() answers -2
unless the escape worked, so its verdict is AC exactly when the escape succeeded. The
control (an "escape" that always works) shows that the gate itself is sound."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import pytest
from cpp_bank import cpp_bank, source
from paths import REPO

from judge import grade
from judge.grading.cpp import toolchain

pytestmark = [pytest.mark.usefixtures("run_cache"),
              pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                                 reason="no C++ compiler with AddressSanitizer here")]
HEADERS = """#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
"""


@pytest.fixture(scope="module")
def lru(tmp_path_factory):
    return cpp_bank(tmp_path_factory)["lru-cache"]


def gated(attempt: str) -> str:
    text = source("lru-cache").replace(
        "  int get(int key) {\n", "  int get(int key) {\n    if (!escaped()) return -2;\n")
    return HEADERS + "static bool escaped() {\n" + attempt + "\n}\n" + text


def verdict(lru, attempt: str) -> str:
    r = grade(lru, gated(attempt), reveal_hidden=True)
    assert r.verdict != "IE", r.ie_cause
    return str(r.verdict)


def test_the_gate_itself(lru):
    assert verdict(lru, "  return true;") == "AC"
    assert verdict(lru, "  return false;") == "WA"


def test_host_files_are_invisible(lru):
    # (the Python install a Python run needs is in every run's view, this one's too: the
    # interpreter and its packages, no file of the repository)
    for path in (REPO / "README.md", Path("/etc/shadow"), REPO / "judge" / "config.py"):
        if path.exists():
            assert verdict(lru, f'  return open("{path}", O_RDONLY) >= 0;') == "WA", path


def test_only_the_scratch_dir_is_writable(lru):
    name = REPO / f"escape-{secrets.token_hex(4)}"
    opens = (f'  int fd = open("{name}", O_CREAT | O_WRONLY, 0644);\n'
             '  int usr = open("/usr/escape", O_CREAT | O_WRONLY, 0644);\n')
    # What counts is the host. A repository under /tmp (a CI clone) sits below the run's own
    # throwaway /tmp, where the write "succeeds" and goes with the run (test_sandbox.py's
    # test_only_scratch_is_writable): there only /usr gates the verdict.
    in_tmp = str(REPO).startswith("/tmp/")
    attempt = opens + ("  return usr >= 0;" if in_tmp else "  return fd >= 0 || usr >= 0;")
    assert verdict(lru, attempt) == "WA"
    assert not name.exists() and not Path("/usr/escape").exists()


def test_no_network_not_even_the_hosts_loopback(lru):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    port = server.getsockname()[1]
    attempt = ("  int s = socket(AF_INET, SOCK_STREAM, 0);\n  sockaddr_in a{};\n"
               f"  a.sin_family = AF_INET;\n  a.sin_port = htons({port});\n"
               '  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);\n'
               "  return s >= 0 && connect(s, (sockaddr*)&a, sizeof a) == 0;")
    try:
        assert verdict(lru, attempt) == "WA"
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()


def test_no_other_grading_no_host_process_is_in_view(lru):
    # the host's /tmp holds other gradings' folders (a build's holds the hidden test's text);
    # the run sees its own folder there only (binds keep their host paths)
    attempt = ('  char self[512] = {0};\n  (void)!readlink("/proc/self/exe", self, 511);\n'
               '  DIR* d = opendir("/tmp");\n  int others = 0;\n'
               "  while (d) { dirent* e = readdir(d); if (!e) break;\n"
               '    if (std::strncmp(e->d_name, "judge-", 6) == 0 && !std::strstr(self, e->d_name))'
               " ++others; }\n"
               "  if (d) closedir(d);\n"
               '  DIR* p = opendir("/proc");\n  int procs = 0;\n'
               "  while (p) { dirent* e = readdir(p); if (!e) break;\n"
               "    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') ++procs; }\n"
               "  if (p) closedir(p);\n"
               "  return others > 0 || procs > 8;")
    assert verdict(lru, attempt) == "WA"
    assert verdict(lru, attempt.replace("others > 0 || procs > 8", "procs > 0 && others == 0"))\
        == "AC"  # it did look


def test_no_privilege_no_new_namespace(lru):
    attempt = ("  return getuid() == 0 || geteuid() == 0 || unshare(CLONE_NEWUSER) == 0 ||\n"
               "         unshare(CLONE_NEWNS) == 0;")
    assert verdict(lru, attempt) == "WA"


def test_a_fork_bomb_is_contained(lru):
    attempt = ("  static int made = -1;\n  if (made >= 0) return made >= 100;\n  made = 0;\n"
               "  for (int i = 0; i < 200; ++i) { pid_t p = fork();\n"
               "    if (p == 0) { pause(); _exit(0); }\n    if (p > 0) ++made; }\n"
               "  return made >= 100;")
    assert verdict(lru, attempt) != "AC"


def test_the_run_has_the_layers_a_python_run_has(lru):
    r = grade(lru, source("lru-cache"))
    layers = r.provenance["sandbox_layers"]
    for layer in ("bwrap", "seccomp", "uid_drop", "cgroup_memory", "cgroup_pids", "private_fs",
                  "no_new_privs", "caps_dropped", "run_fs", "resident_view"):
        assert layers.get(layer), (layer, layers)
    assert r.provenance["missing_layers"] == []
