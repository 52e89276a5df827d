#!/usr/bin/env bash
# The GPU checks and figures, as one prepared script for a machine with an NVIDIA GPU, e.g. a
# cluster host without a network whose Python already has a CUDA build of torch. Run it from
# anywhere; it works in the repository root. Everything goes to one log, $OUT/gpu_checks.txt
# (default OUT: artifacts/gpu), with the grading reports beside it as JSON. The whole run stays
# within $BUDGET_S seconds (default 480): each step gets at most what is left.
#
#   0. set-up: .venv when it imports torch with CUDA; else `scripts/setup.sh --offline
#      $WHEELHOUSE` (default ./wheelhouse, made by scripts/wheelhouse.sh where there is an
#      index); else from source with a Python that has everything. The device, torch, the
#      sandbox's layers; without a private filesystem view a worker must refuse to start.
#   1. the chapter's experiment on CUDA (outputs identical, computed tokens falling)
#   2. the tiered pool's offload/load bandwidth with pinned memory vs the plain copy peak
#   3. reload vs recompute per token on CUDA
#   4. grading problem 143 on the GPU: the reference (AC, with the CUDA-only hidden tests run
#      and passed, not skipped) and the unprotected-hits bug (WA)
#   5. `judge check 143 --device cuda`
#   6. `judge parity 143 reference/tiered.py`: CPU here against an embedded CUDA worker
#   7. warm CUDA forks (JUDGE_WARM_CUDA=1, off by default until this step has passed on a GPU):
#      every known submission of 143 graded on the device cold and warm, the same verdict and
#      first failure each way, the grader path each way, and the median seconds per grading
#   8. CUDA C++ on the GPU: tests/fixtures/handbook_cuda's block-sums-cuda built with nvcc
#      (-O2 -std=c++17 -arch=native -lineinfo) in the sandbox with the device nodes and run there:
#      the solution AC, the starter not; the build (nvcc, not the CPU emulator), compile and run
#      seconds of each
#
# STEPS="4 7" runs only those steps after the set-up (default: all).
# DEVICE=cpu runs the same steps on the CPU (a rehearsal where there is no GPU; the parity step
# then has no GPU worker and says so).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-artifacts/gpu}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
device="${DEVICE:-cuda}"
wh="${WHEELHOUSE:-wheelhouse}"
budget="${BUDGET_S:-480}"
steps=" ${STEPS:-1 2 3 4 5 6 7 8} "  # e.g. STEPS=7: the set-up (always) and step 7 alone
wanted() { [[ "$steps" == *" $1 "* ]]; }
t0=$SECONDS
summary="$out/summary.txt"
: >"$summary"

left() { echo $((budget - (SECONDS - t0))); }
step() { echo; echo "== $* ($((SECONDS - t0)) s of $budget)"; }
# bounded CAP NAME EXPECT CMD...: run CMD for at most CAP seconds (less if the budget is nearly
# spent); EXPECT is the exit status that counts as a pass. One summary line per call.
bounded() {
  local cap=$1 name=$2 expect=$3; shift 3
  local l; l=$(left)
  if [ "$l" -lt 10 ]; then
    echo "skipped: the budget of $budget s is spent" >&2
    echo "SKIPPED  $name (no time left)" >>"$summary"
    return 124
  fi
  [ "$cap" -le "$l" ] || cap=$l
  local s=$SECONDS rc
  timeout -k 5 "$cap" "$@"
  rc=$?
  local verdict="ok"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict="TIMEOUT"
  elif [ "$rc" != "$expect" ]; then verdict="FAILED"; fi
  echo "exit $rc (expected $expect): $verdict" >&2
  printf '%-8s %s (exit %s, %s s)\n' "$verdict" "$name" "$rc" "$((SECONDS - s))" >>"$summary"
  return "$rc"
}

{
  echo "gpu_checks $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), device $device"

  step "0. set-up"
  py=.venv/bin/python
  judge=(.venv/bin/judge)
  usable() { # $1: python; the platform imports, and torch sees the device asked for
    "$1" -c 'import sys, torch, judge.runner, web.app
sys.exit(0 if sys.argv[1] == "cpu" or torch.cuda.is_available() else 3)' "$device" 2>/dev/null
  }
  if [ -x "$py" ] && usable "$py"; then
    echo "using .venv as it is"
  elif [ -f "$wh/requirements.txt" ]; then
    bounded 240 "set-up --offline $wh" 0 scripts/setup.sh --offline "$wh" ${HOST_PYTHON:+--python "$HOST_PYTHON"}
  else
    echo "no usable .venv and no wheelhouse at $wh: trying the host's Python from source"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
    for c in ${HOST_PYTHON:-} python3.13 python3.12 python3.11 python3; do
      if command -v "$c" >/dev/null && usable "$c"; then py="$c"; judge=("$c" -m judge); break; fi
    done
  fi
  if ! usable "$py"; then
    echo "nothing to run with: no Python here imports torch (with $device) and the platform."
    echo "Make a wheelhouse where there is an index (scripts/wheelhouse.sh wheelhouse --python X.Y),"
    echo "bring it here as ./wheelhouse (or WHEELHOUSE=DIR), and run this again."
    echo "FAILED   set-up (nothing to run with)" >>"$summary"
    exit 1
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | head -3
  "$py" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda build', torch.version.cuda, 'available', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
  "${judge[@]}" doctor --json >"$out/doctor.json" 2>&1
  "$py" - "$out/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"sandbox: {d['sandbox_mode']}; missing layers: {', '.join(d['missing']) or 'none'}")
for name in d["missing"]:
    print(f"  -- {name}: {d['layers'][name]['why']}")
PY
  private_fs="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["layers"]["private_fs"]["ok"])' "$out/doctor.json")"
  if [ "$private_fs" != "True" ]; then
    echo "no private filesystem view here: a worker must refuse other people's code"
    tmp="$(mktemp -d)"
    bounded 60 "worker refuses without private_fs" 2 "${judge[@]}" worker --data "$tmp"
    rm -rf "$tmp"
  fi

  if wanted 1; then  # (the step's lines are not indented: heredocs inside)
  step "1. chapter experiment on $device"
  bounded 120 "experiment" 0 "$py" -m reference.experiments.multi_turn --device "$device"
  bounded 90 "experiment --json" 0 "$py" -m reference.experiments.multi_turn --device "$device" --json
  fi  # step 1

  if wanted 2; then  # (the step's lines are not indented: heredocs inside)
  step "2. tiered pool bandwidth (pinned) vs plain copy"
  bounded 90 "tiered_bandwidth" 0 "$py" benchmarks/tiered_bandwidth.py --device "$device"
  fi  # step 2

  if wanted 3; then  # (the step's lines are not indented: heredocs inside)
  step "3. reload vs recompute per token"
  bounded 120 "reload_vs_recompute" 0 "$py" benchmarks/reload_vs_recompute.py --device "$device"
  fi  # step 3

  if wanted 4; then  # (the step's lines are not indented: heredocs inside)
  step "4. grading 143 on $device"
  # JSON reports beside the log; the summary says which tests ran where, and the sandbox layers
  # this host lacks (the terminal report prints the same line).
  summarize() {
    "$py" - "$1" "$2" "$device" <<'PY'
import json, sys
path, want, device = sys.argv[1:4]
try:
    r = json.load(open(path))
except ValueError:
    print(open(path).read()[-3000:]); sys.exit(1)
prov = r.get("provenance") or {}
print(f"verdict {r['verdict']} (want {want}), score {r['score']:.0%}, device {prov.get('device')}"
      f" {prov.get('gpu_name') or ''}, torch {prov.get('torch')}")
for t in r["tests"]:
    print(f"  {t['verdict']:3} {t['name']}")
cuda = [t for t in r["tests"] if "cuda" in t["name"]]
print("CUDA-only tests:", ", ".join(f"{t['name'].split('::')[-1]} {t['verdict']}" for t in cuda))
print("missing sandbox layers:", ", ".join(prov.get("missing_layers") or []) or "none")
ok = r["verdict"] == want
if want == "AC" and device == "cuda":
    ok = ok and bool(cuda) and all(t["verdict"] == "AC" for t in cuda)
sys.exit(0 if ok else 1)
PY
  }
  bounded 120 "grade reference (AC)" 0 "${judge[@]}" grade 143 reference/tiered.py --device "$device" --json >"$out/grade_reference.json"
  summarize "$out/grade_reference.json" AC
  printf '%-8s %s\n' "$([ $? = 0 ] && echo ok || echo FAILED)" \
    "reference graded AC$([ "$device" = cuda ] && echo ', its CUDA-only tests run and AC')" >>"$summary"
  bounded 120 "grade unprotected_hits (WA)" 1 "${judge[@]}" grade 143 problems/143-tiered-kv-cache/submissions/wrong_answer/unprotected_hits.py --device "$device" --json >"$out/grade_unprotected_hits.json"
  summarize "$out/grade_unprotected_hits.json" WA
  printf '%-8s %s\n' "$([ $? = 0 ] && echo ok || echo FAILED)" "unprotected_hits graded WA" >>"$summary"
  fi  # step 4

  if wanted 5; then  # (the step's lines are not indented: heredocs inside)
  step "5. judge check 143 --device $device"
  bounded 180 "judge check 143" 0 "${judge[@]}" check 143 --device "$device"
  fi  # step 5

  if wanted 6; then  # (the step's lines are not indented: heredocs inside)
  step "6. judge parity 143 (CPU here vs the $device worker of a local server)"
  # An embedded server with one grading worker, on loopback, for this step only. It grades the
  # reference alone, so it may run where the sandbox is weak (--allow-weak-sandbox).
  data="$(mktemp -d)"
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  token="gpu-checks-$RANDOM$RANDOM"
  "${judge[@]}" serve --host 127.0.0.1 --port "$port" --data "$data" --workers 1 \
    --skip-build-check --allow-weak-sandbox --instructor-token "$token" --log-level warning \
    >"$out/parity_server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 60); do
    "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "http://127.0.0.1:$port/api/problems" >/dev/null 2>&1 && break
    sleep 0.5
  done
  expect=0; [ "$device" = cuda ] || expect=3  # no GPU worker on a CPU rehearsal
  bounded 180 "judge parity 143" "$expect" "${judge[@]}" parity 143 reference/tiered.py \
    --server "http://127.0.0.1:$port" --token "$token" --timeout 170
  kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
  rm -rf "$data"
  fi  # step 6

  if wanted 7; then  # (the step's lines are not indented: heredocs inside)
  step "7. warm $device forks: 143's known submissions cold and warm (JUDGE_WARM_CUDA=1)"
  JUDGE_WARM_CUDA=1 bounded 240 "warm $device forks grade as cold runs" 0 "$py" - "$device" <<'PY'
import re, statistics, sys, time
from judge.grading import warm_pool
from judge.grading.grader import grade
from judge.problem import ProblemBank

device = sys.argv[1]
problem = ProblemBank().get("143")
paths = re.compile(r"/(?:tmp|\.judge-warm)/[^\s'\"):]*")

def essence(report):
    d = report.to_dict()
    first = d.get("first_failure") or {}
    return (d["verdict"], first.get("test"), first.get("kind"),
            paths.sub("<path>", first.get("message") or ""))

seconds, bad = {"cold": [], "warm": []}, 0
files = problem.submissions("accepted") + problem.submissions("wrong_answer")[:8]  # the budget
for path in files:
    source = path.read_text(encoding="utf-8")
    got = {}
    for mode in ("cold", "warm"):
        with warm_pool.forced(mode == "warm"):
            t = time.perf_counter()
            report = grade(problem, source, device=device)
            seconds[mode].append(time.perf_counter() - t)
        layers = report.provenance.get("sandbox_layers") or {}
        got[mode] = (essence(report), layers.get("grader_path", "cold"))
    same = got["cold"][0] == got["warm"][0]
    bad += not same or got["warm"][1] != "warm"
    print(f"{'same' if same else 'DIFFERENT':9} {path.parent.name}/{path.name}: "
          f"cold {got['cold'][0][0]} ({got['cold'][1]}), warm {got['warm'][0][0]} ({got['warm'][1]})")
    if not same:
        print("   cold:", got["cold"][0], "\n   warm:", got["warm"][0])
cold, warm = statistics.median(seconds["cold"]), statistics.median(seconds["warm"])
print(f"median s per grading on {device}: cold {cold:.2f}, warm {warm:.2f}, warm/cold {warm / cold:.2f}x"
      f" ({len(files)} files, {warm_pool.fallbacks()} warm runs fell back to cold)")
sys.exit(1 if bad else 0)
PY
  fi  # step 7

  if wanted 8; then  # (the step's lines are not indented: heredocs inside)
  step "8. CUDA C++ with nvcc on $device: block-sums-cuda, solution AC, starter not"
  bounded 300 "CUDA C++ block-sums-cuda: solution AC, starter not (nvcc on $device)" 0 \
    env KVPRACTICE_CACHE="$out/cuda_cache" "$py" - "$out" "$device" <<'PY'
import json, sys, tempfile, time
from pathlib import Path
from judge import grade
from judge.authoring.importer import import_problems
from judge.grading.cpp import cuda
from judge.problem import load_problem
out, device = Path(sys.argv[1]), sys.argv[2]
book = Path("tests/fixtures/handbook_cuda")
res = import_problems([book], Path(tempfile.mkdtemp()) / "problems")
cu = next(load_problem(str(i.folder)) for i in res.imported if i.key.endswith("-cuda"))
print("nvcc:", cuda.gpu_toolchain(), "| emulable:", cuda.emulable(cu))
ok = True
for name, want_ac in (("solution.cu", True), ("starter.cu", False)):
    t = time.perf_counter()
    r = grade(cu, (book / "cuda" / "block-sums" / name).read_text())
    d = r.to_dict()
    (out / f"cuda_{name}.json").write_text(json.dumps(d, indent=1, default=str))
    built = r.provenance.get("cuda_build")
    tm = r.timings
    print(f"{name}: {r.verdict} (want {'AC' if want_ac else 'not AC'}), built by {built}, "
          f"device {r.provenance.get('device')}, reference {tm.get('reference_s')} s, compile "
          f"{tm.get('compile_s')} s (cpu {tm.get('compile_cpu_s')}), run {tm.get('run_s')} s, "
          f"total {time.perf_counter() - t:.1f} s")
    for x in d["tests"]:
        print(f"  {x['verdict']:3} {x['name']}")
    if d.get("first_failure"):
        print("  first failure:", (d["first_failure"].get("message") or "")[:300])
    ok = ok and (r.verdict == "AC") == want_ac and (built == "nvcc" or device != "cuda")
sys.exit(0 if ok else 1)
PY
  fi  # step 8

  echo
  echo "== summary ($((SECONDS - t0)) s)"
  cat "$summary"
} 2>&1 | tee "$out/gpu_checks.txt"
! grep -qE '^(FAILED|TIMEOUT|SKIPPED)' "$summary"
