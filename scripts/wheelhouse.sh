#!/usr/bin/env bash
# A folder of wheels for a GPU host without a network: every run-time dependency of the platform
# (requirements/runtime.txt and what it pulls in, plus the build backend for installing the
# project), never torch or the NVIDIA runtime wheels: the host keeps the CUDA torch it has.
#
#   scripts/wheelhouse.sh OUT [--python 3.12] [--platform manylinux_2_28_x86_64]
#
# Run it where the package index is reachable, carry OUT to the GPU host, and there run
# `scripts/setup.sh --offline OUT`. The platform's older manylinux tags are accepted too
# (manylinux_2_28 takes wheels for glibc 2.28 and below, down to manylinux1). OUT gets the
# wheels, requirements.txt (each wheel pinned with its sha256, for `pip --require-hashes`)
# and wheelhouse.txt (what it was made for). Fails when OUT would exceed 64 MiB or when the
# wheels do not resolve the requirements on their own (`pip install --dry-run --no-index`).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

usage() { echo "usage: $0 OUT [--python X.Y] [--platform TAG]" >&2; exit 2; }
log() { printf '\033[1m[wheelhouse]\033[0m %s\n' "$*" >&2; }

out="" ver="3.12" plat="manylinux_2_28_x86_64"
while [ $# -gt 0 ]; do
  case "$1" in
    --python) ver="${2:?}"; shift ;;
    --platform) plat="${2:?}"; shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) [ -z "$out" ] || usage; out="$1" ;;
  esac
  shift
done
[ -n "$out" ] || usage
[[ "$ver" =~ ^3\.[0-9]+$ ]] || { log "--python takes X.Y, e.g. 3.12"; exit 2; }
limit_mib=64

# A manylinux tag accepts every older glibc too; pip only expands the legacy 2014/2010 names,
# so list them all (perennial names, and the legacy aliases of 2_17, 2_12 and 2_5).
platforms=()
if [[ "$plat" =~ ^manylinux_2_([0-9]+)_(.+)$ ]] || [[ "$plat" =~ ^manylinux(2014|2010|1)_(.+)$ ]]; then
  arch="${BASH_REMATCH[2]}"
  case "${BASH_REMATCH[1]}" in 2014) glibc=17 ;; 2010) glibc=12 ;; 1) glibc=5 ;; *) glibc="${BASH_REMATCH[1]}" ;; esac
  for ((m = glibc; m >= 5; m--)); do platforms+=("manylinux_2_${m}_${arch}"); done
  [ "$glibc" -ge 17 ] && platforms+=("manylinux2014_${arch}")
  [ "$glibc" -ge 12 ] && platforms+=("manylinux2010_${arch}")
  platforms+=("manylinux1_${arch}")
else
  platforms=("$plat")
fi
abi="cp${ver/./}"
target_args=(--only-binary=:all: --implementation cp --python-version "$ver" --abi "$abi")
for p in "${platforms[@]}"; do target_args+=(--platform "$p"); done

# pip evaluates environment markers (python_version < "3.13", ...) with the interpreter that
# runs it, whatever --python-version says: run it with the target Python when there is one.
pip_py=""
for cand in "python$ver" "/usr/bin/python$ver" "/usr/local/bin/python$ver" \
            "$HOME"/.pyenv/versions/"$ver"*/bin/"python$ver"; do
  if "$cand" -c 'import sys, pip; sys.exit(sys.version_info[:2] != tuple(map(int, sys.argv[1].split("."))))' "$ver" >/dev/null 2>&1; then
    pip_py="$cand"; break
  fi
done
if [ -z "$pip_py" ]; then
  for cand in "$repo/.venv/bin/python" python3; do
    if "$cand" -c "import pip" >/dev/null 2>&1; then pip_py="$cand"; break; fi
  done
  [ -n "$pip_py" ] || { log "no Python with pip found"; exit 1; }
  log "no Python $ver with pip here: resolving with $("$pip_py" -c 'import platform; print(platform.python_version())'), whose markers may differ from $ver's (the check below still runs)"
fi

# Never write into a folder that is not ours; refresh one we made before.
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -f "$out/wheelhouse.txt" ]; then
  log "$out exists and is not a wheelhouse (no wheelhouse.txt): give an empty or new folder"
  exit 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/*.whl "$out/requirements.txt" "$out/wheelhouse.txt"

# What `pip install -e .` needs to build the project offline (pyproject's build-system).
mapfile -t build_reqs < <("$pip_py" - "$repo/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
PY
)

log "downloading for CPython $ver on $plat (and older manylinux) with $pip_py"
"$pip_py" -m pip download --disable-pip-version-check -q -d "$out" "${target_args[@]}" \
  -r "$repo/requirements/runtime.txt" "${build_reqs[@]}"

# pip kept only what its own interpreter's markers asked for; the host's Python is any X.Y.z,
# on this platform. Add what any patch release of X.Y would need (e.g. redis wants async-timeout
# below 3.11.3), until nothing is missing.
arch="${arch:-x86_64}"
for round in 1 2 3 4 5; do
  mapfile -t more < <("$pip_py" - "$out" "$ver" "$arch" <<'PY'
import os, re, sys, zipfile
from pip._vendor.packaging.requirements import Requirement
out, ver, arch = sys.argv[1:4]
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
wheels = [n for n in os.listdir(out) if n.endswith(".whl")]
have = {norm(n.split("-")[0]) for n in wheels}
envs = [{"python_version": ver, "python_full_version": f"{ver}.{p}",
         "implementation_version": f"{ver}.{p}", "implementation_name": "cpython",
         "platform_python_implementation": "CPython", "sys_platform": "linux",
         "platform_system": "Linux", "os_name": "posix", "platform_machine": arch,
         "extra": ""} for p in range(0, 40)]
need = set()
for name in wheels:
    with zipfile.ZipFile(os.path.join(out, name)) as z:
        meta = next(m for m in z.namelist() if m.endswith(".dist-info/METADATA"))
        for line in z.read(meta).decode("utf-8", "replace").splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if norm(req.name) in have:
                continue
            if req.marker is None or any(req.marker.evaluate(e) for e in envs):
                req.marker = None
                need.add(str(req))
print("\n".join(sorted(need)))
PY
)
  [ "${#more[@]}" -gt 0 ] && [ -n "${more[0]}" ] || break
  log "also for other $ver.x releases: ${more[*]}"
  "$pip_py" -m pip download --disable-pip-version-check -q -d "$out" "${target_args[@]}" "${more[@]}"
done

# torch and the CUDA runtime belong to the host; a dependency that pulls them in is a bug here.
bad="$(cd "$out" && ls | grep -iE '^(torch|triton|nvidia_|nvidia-)' || true)"
if [ -n "$bad" ]; then
  log "these must come from the GPU host, not the wheelhouse: $bad"
  exit 1
fi

# requirements.txt: every wheel pinned with its hash, so the host installs exactly these files.
"$pip_py" - "$out" "$ver" "$plat" <<'PY'
import hashlib, os, re, sys, time
out, ver, plat = sys.argv[1:4]
lines = [f"# Made by scripts/wheelhouse.sh for CPython {ver} on {plat} (and older manylinux).",
         "# pip install --no-index --find-links DIR --require-hashes -r DIR/requirements.txt"]
wheels = sorted(n for n in os.listdir(out) if n.endswith(".whl"))
for name in wheels:
    dist, version = name.split("-")[:2]
    with open(os.path.join(out, name), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    lines.append(f"{re.sub(r'[-_.]+', '-', dist).lower()}=={version} --hash=sha256:{digest}")
with open(os.path.join(out, "requirements.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
size = sum(os.path.getsize(os.path.join(out, n)) for n in wheels)
with open(os.path.join(out, "wheelhouse.txt"), "w") as f:
    f.write(f"python={ver}\nplatform={plat}\nwheels={len(wheels)}\nbytes={size}\n"
            f"made={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
PY

# Complete means: the run-time requirements resolve from these files alone.
dry="$(mktemp -d)"
trap 'rm -rf "$dry"' EXIT
if ! "$pip_py" -m pip install --disable-pip-version-check -q --dry-run --ignore-installed \
      --no-index --find-links "$out" "${target_args[@]}" --target "$dry/t" \
      -r "$repo/requirements/runtime.txt" "${build_reqs[@]}" >"$dry/log" 2>&1; then
  cat "$dry/log" >&2
  log "incomplete: the requirements do not resolve from $out alone (above)"
  exit 1
fi

bytes="$(du -sb "$out" | cut -f1)"
mib="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
n="$(ls "$out"/*.whl | wc -l)"
echo "wheelhouse $out: $n wheels, $mib MiB, for CPython $ver on $plat (resolves offline: yes)"
if [ "$bytes" -gt $((limit_mib * 1024 * 1024)) ]; then
  log "over the limit of $limit_mib MiB"
  exit 1
fi
