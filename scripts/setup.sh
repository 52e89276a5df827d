#!/usr/bin/env bash
# One-time (and idempotent) set-up on a fresh machine: system packages where we can install them,
# the project's virtual environment at .venv/, and the project itself in it.
#
#   scripts/setup.sh          what the platform needs to run
#   scripts/setup.sh --test   also what the test suite needs (Chromium for the browser tests)
#   scripts/setup.sh --offline WHEELHOUSE [--python PY]
#                             a GPU host without a network: .venv keeps the torch of the host's
#                             Python (PY, else the first python3.x here that has torch >= 2.4)
#                             and gets everything else from WHEELHOUSE (scripts/wheelhouse.sh)
#
# torch is installed with pip on purpose: `pip install torch==2.13.0` finds the CPU wheel on the
# build machines' disk, where uv or poetry would download a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

torch_pin="torch==2.13.0"
want_test=0 offline="" host_py=""
usage() { echo "usage: $0 [--test] | --offline WHEELHOUSE [--python PY]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --test) want_test=1 ;;
    --offline) [ $# -ge 2 ] || usage; offline="$2"; shift ;;
    --python) [ $# -ge 2 ] || usage; host_py="$2"; shift ;;
    *) usage ;;
  esac
  shift
done
[ -z "$offline" ] || [ "$want_test" = 0 ] || { echo "--test needs the package index" >&2; exit 2; }
[ -n "$offline" ] || [ -z "$host_py" ] || { echo "--python goes with --offline" >&2; exit 2; }

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }
offline_marker=.venv/.kvpractice-offline

# --- offline: keep the host's torch, the rest from a wheelhouse, no package index -------------
# A CUDA build of torch is the one thing a GPU host must not lose: nothing here installs torch,
# and .venv sees the host's site packages, so an older torch (>= 2.4) is kept as it is.
offline_setup() {
  local wh="$1"
  if [ ! -f "$wh/requirements.txt" ] || [ ! -f "$wh/wheelhouse.txt" ]; then
    log "$wh is not a wheelhouse (scripts/wheelhouse.sh makes one: wheels, requirements.txt, wheelhouse.txt)"
    exit 1
  fi
  wh="$(cd "$wh" && pwd)"
  command -v bwrap >/dev/null 2>&1 || log "bubblewrap is not installed (no index to get it from):" \
    "local grading works and names the missing sandbox layers; judge worker/serve refuse" \
    "other people's code without it (--allow-weak-sandbox grades code you trust)"

  # Which Python has torch: the one named, else the first python3.x that does.
  local probe='
import os, platform, re, sys
if sys.version_info < (3, 11):
    print(f"Python {platform.python_version()} (< 3.11)"); sys.exit(3)
try:
    import torch
except Exception as e:
    print(f"Python {platform.python_version()} without torch ({type(e).__name__})"); sys.exit(3)
if tuple(map(int, re.match(r"(\d+)\.(\d+)", torch.__version__).groups())) < (2, 4):
    print(f"torch {torch.__version__} (< 2.4)"); sys.exit(3)
site_dir = os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__)))
print("\t".join([f"{sys.version_info[0]}.{sys.version_info[1]}", torch.__version__,
                 str(torch.version.cuda or "none"), site_dir, os.path.realpath(sys.executable),
                 os.path.realpath(sys.prefix)]))'
  local cands=() c info="" tried=()
  if [ -n "$host_py" ]; then cands=("$host_py"); else
    cands=(python3.13 python3.12 python3.11 python3 /usr/bin/python3 /usr/local/bin/python3)
  fi
  local own_venv
  own_venv="$(realpath -m .venv)"
  for c in "${cands[@]}"; do
    command -v "$c" >/dev/null 2>&1 || continue
    if info="$("$c" -c "$probe" 2>/dev/null)"; then
      # An activated .venv is not the host: it is what gets replaced below.
      if [ "${info##*$'\t'}" != "$own_venv" ]; then host_py="$c"; break; fi
      info="this project's .venv, not the host's Python"
    fi
    tried+=("$c: ${info:-does not run}")
    info=""
  done
  if [ -z "$info" ]; then
    log "no Python here has torch >= 2.4 (tried: ${tried[*]:-nothing found})."
    log "--offline keeps the host's torch and installs none: install torch (the CUDA build for" \
        "this host) into its Python, or name one that has it with --python PY."
    exit 1
  fi
  local pyver torch_v torch_cuda torch_site py_real py_prefix
  IFS=$'\t' read -r pyver torch_v torch_cuda torch_site py_real py_prefix <<<"$info"
  local want_py
  want_py="$(sed -n 's/^python=//p' "$wh/wheelhouse.txt")"
  if [ "$want_py" != "$pyver" ]; then
    log "$wh holds wheels for Python $want_py, but the host's torch is on Python $pyver ($py_real):" \
        "make one with scripts/wheelhouse.sh OUT --python $pyver"
    exit 1
  fi
  if [ "$torch_site" = "$("$host_py" -c 'import site; print(site.getusersitepackages())' 2>/dev/null)" ]; then
    log "note: torch is in the user site ($torch_site): the sandbox's uid cannot read it there," \
        "so grading will stop with an internal error naming that path; install torch for all users"
  fi

  # .venv: made from that Python with its site packages, and ours only if we made it so.
  local key="$py_real $torch_site torch $torch_v"
  if [ -e .venv ] && [ "$(cat "$offline_marker" 2>/dev/null)" != "$key" ]; then
    log "replacing .venv: it was not made by --offline from $py_real with torch $torch_v"
    rm -rf .venv
  fi
  if [ ! -x .venv/bin/python ]; then
    log "creating .venv from $py_real (Python $pyver), with the host's site packages"
    # Debian's Python without python3-venv has no ensurepip: then the host's pip does the
    # installing, seen through the system site packages like torch.
    "$host_py" -m venv --system-site-packages .venv >/dev/null 2>&1 ||
      { rm -rf .venv && "$host_py" -m venv --system-site-packages --without-pip .venv; }
  fi
  .venv/bin/python -m pip --version >/dev/null 2>&1 ||
    { log "no pip in .venv or in $py_real: install the host's python3-pip (or python3-venv)"; exit 1; }

  # torch as the sandboxed child sees it (-s: no user site). A host Python that is itself a
  # venv (or keeps torch in its user site) does not pass it on: a .pth line does.
  local purelib seen
  purelib="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  local torch_of='import os, torch; print(os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__))))'
  seen="$(.venv/bin/python -s -c "$torch_of" 2>/dev/null || true)"
  if [ "$seen" != "$torch_site" ]; then
    echo "$torch_site" > "$purelib/_kvpractice_host_torch.pth"
    seen="$(.venv/bin/python -s -c "$torch_of" 2>/dev/null || true)"
  fi
  if [ "$seen" != "$torch_site" ]; then
    log ".venv sees torch at '${seen:-nowhere}', not the host's at $torch_site: remove .venv and retry"
    exit 1
  fi

  # Exactly the wheelhouse's files (hashes checked); pins the host already has stay the host's.
  # Then the project, built by the wheelhouse's setuptools (--no-build-isolation: there is no
  # index to fill an isolated build environment from) and without resolving its dependencies,
  # so torch is not even looked at.
  log "installing from $wh with no package index (torch stays the host's)"
  local pip_log=.venv/pip-install.log
  if ! { PIP_NO_INDEX=1 .venv/bin/python -m pip install --disable-pip-version-check --no-index \
           --find-links "$wh" --require-hashes -r "$wh/requirements.txt" &&
         PIP_NO_INDEX=1 .venv/bin/python -m pip install --disable-pip-version-check --no-index \
           --find-links "$wh" --no-deps --no-build-isolation -e . ; } >"$pip_log" 2>&1; then
    cat "$pip_log" >&2
    log "offline install failed (log above, also in $pip_log)"
    exit 1
  fi
  local after
  after="$(.venv/bin/python -s -c "$torch_of"'; print(torch.__version__); import judge.runner, web.app' 2>&1 || true)"
  if [ "$after" != "$torch_site"$'\n'"$torch_v" ]; then
    log "after the install .venv does not import the host's torch $torch_v from $torch_site" \
        "with the project: ${after:-nothing}; see $pip_log"
    exit 1
  fi
  echo "$key" > "$offline_marker"

  # What came from where: the wheelhouse's pins found in .venv, the rest already on the host.
  local installed kept
  installed="$(.venv/bin/python -m pip list --disable-pip-version-check --format=freeze --path "$purelib" 2>/dev/null |
               grep -v -e '^kvcache-practice==' -e '^pip==' | tr '\n' ' ')"
  kept="$(.venv/bin/python - "$wh/requirements.txt" "$purelib" <<'PY'
import importlib.metadata as md, re, sys
own = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower()
       for d in md.distributions(path=[sys.argv[2]])}
for line in open(sys.argv[1]):
    name = line.split("==")[0].strip()
    if name and not name.startswith("#") and name not in own:
        try:
            print(f"{name}=={md.version(name)}", end=" ")
        except md.PackageNotFoundError:
            pass
PY
)"
  log "kept from the host: torch $torch_v (CUDA $torch_cuda) at $torch_site, Python $pyver ($py_real)"
  [ -z "$kept" ] || log "also kept from the host (the wheelhouse's pins, already there): $kept"
  log "installed into .venv from the wheelhouse: ${installed:-nothing}"
  log "and the project itself (editable, no dependencies resolved: torch untouched)"
  log "ready (offline). Check with: .venv/bin/judge doctor"
}

if [ -n "$offline" ]; then
  offline_setup "$offline"
  exit 0
fi

# --- system packages (Debian/Ubuntu, as root); elsewhere we say what is missing and go on -----
apt_pkgs=()
command -v bwrap >/dev/null 2>&1 || apt_pkgs+=(bubblewrap)
# C++ problems (judge/grading/cpp/): g++ brings the sanitizers' runtimes (libasan, libubsan,
# liblsan, libtsan) and binutils (addr2line names the student's line in a report); clang is
# the second compiler. `judge doctor` lists what works.
command -v g++ >/dev/null 2>&1 || apt_pkgs+=(g++)
command -v clang++ >/dev/null 2>&1 || apt_pkgs+=(clang libclang-rt-dev)
command -v addr2line >/dev/null 2>&1 || apt_pkgs+=(binutils)
if [ "$want_test" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || apt_pkgs+=(chromium)
  # The distributed-grading tests start their own throwaway PostgreSQL and Redis on loopback.
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || apt_pkgs+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || apt_pkgs+=(redis-server)
fi
if [ "${#apt_pkgs[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${apt_pkgs[*]} (apt-get)"
    # Debian's chromium pulls in many packages; a stale index makes apt fail, so refresh it first.
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
  else
    log "not installed: ${apt_pkgs[*]} (needs root + apt-get); the sandbox reports the layers it lacks"
  fi
fi

# --- the virtual environment ---------------------------------------------------------------------
# Prefer the system Python: the sandbox drops to an unprivileged uid, which cannot run an
# interpreter that lives under root's home (pyenv).
py=""
for cand in /usr/bin/python3.11 /usr/bin/python3 python3.11 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    py="$cand"; break
  fi
done
[ -n "$py" ] || { log "Python >= 3.11 with the venv module is required"; exit 1; }

if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $py"
  "$py" -m venv .venv
fi

stamp=.venv/.kvpractice-installed
want="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ -f "$offline_marker" ]; then
  # Installing the CPU pin here would shadow the host's CUDA torch: leave such a .venv alone.
  log ".venv keeps the host's torch (made by --offline): not installing $torch_pin into it;" \
      "update it with scripts/setup.sh --offline WHEELHOUSE, or remove .venv for this set-up"
elif [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing Python packages into .venv (torch from the local wheel when there is one)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  pip_log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q "$torch_pin" &&
         .venv/bin/python -m pip install -q -e ".[test]"; } >"$pip_log" 2>&1; then
    cat "$pip_log" >&2
    log "pip install failed (log above, also in $pip_log)"
    exit 1
  fi
  echo "$want" > "$stamp"
fi

# --- the front end (Pyodide, the editor bundle, wheels for the browser) --------------------------
if [ -x scripts/build_frontend.sh ]; then
  scripts/build_frontend.sh
fi
log "ready"
