#!/usr/bin/env bash
# One-time (and idempotent) set-up on a fresh machine: system packages where we can install them,
# the project's virtual environment at .venv/, and the project itself in it.
#
#   scripts/setup.sh          what the platform needs to run
#   scripts/setup.sh --test   also what the test suite needs (Chromium for the browser tests)
#
# torch is installed with pip on purpose: `pip install torch==2.13.0` finds the CPU wheel on the
# build machines' disk, where uv or poetry would download a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# --- system packages (Debian/Ubuntu, as root); elsewhere we say what is missing and go on -----
apt_pkgs=()
command -v bwrap >/dev/null 2>&1 || apt_pkgs+=(bubblewrap)
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
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing Python packages into .venv (torch from the local wheel when there is one)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  pip_log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q "torch==2.13.0" &&
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
