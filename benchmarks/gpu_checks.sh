#!/usr/bin/env bash
# The GPU checks and figures, as one prepared script for a machine with an NVIDIA GPU (e.g. a lent
# device): run it from the repository root after `scripts/setup.sh`. Everything it prints goes to
# $OUT (default: artifacts/gpu) as well. Each step is bounded so the whole run fits ~8 minutes.
#   1. the chapter's experiment on CUDA (outputs identical, computed tokens falling)
#   2. the tiered pool's offload/load bandwidth with pinned memory vs the plain copy peak
#   3. reload vs recompute per token on CUDA
#   4. grading problem 143 on the GPU: the reference (AC) and the unprotected-hits bug (WA);
#      the CUDA-only hidden tests run there instead of being skipped
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-artifacts/gpu}"
mkdir -p "$out"
py=.venv/bin/python
step() { echo; echo "== $*"; }
{
  step "device"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | head -3
  $py -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
  step "1. chapter experiment on CUDA"
  timeout 120 $py -m reference.experiments.multi_turn --device cuda
  timeout 60 $py -m reference.experiments.multi_turn --device cuda --json
  step "2. tiered pool bandwidth (pinned) vs plain copy"
  timeout 120 $py benchmarks/tiered_bandwidth.py --device cuda
  step "3. reload vs recompute per token"
  timeout 150 $py benchmarks/reload_vs_recompute.py --device cuda
  step "4. grading 143 on the GPU"
  timeout 120 .venv/bin/judge grade 143 reference/tiered.py --device cuda
  echo "exit $? (0 = AC)"
  timeout 120 .venv/bin/judge grade 143 problems/143-tiered-kv-cache/submissions/wrong_answer/unprotected_hits.py --device cuda
  echo "exit $? (1 = not AC, expected WA)"
} 2>&1 | tee "$out/gpu_checks.txt"
