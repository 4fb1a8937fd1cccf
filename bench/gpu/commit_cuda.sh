#!/usr/bin/env bash
# GPU benchmark: TorchState.commit() of CUDA model and optimizer state (bench/gpu/commit_cuda.py)
# against a device-to-device copy of the same bytes and a copy to pinned host memory, in one
# process. Prints a markdown table (title, command, one row per model); log in OUT_DIR. Exits 77
# without a GPU. --quick: the 25M-parameter MLP only, fewer repeats.
#   bench/gpu/commit_cuda.sh BUILD_DIR OUT_DIR [--quick]
# needs: cohort_python
set -euo pipefail
# shellcheck source=lib/python_bench.sh
source "$(dirname "$0")/lib/python_bench.sh"
gpu_python_setup commit_cuda "$@"

args=(--models "mlp25m,mlp500m" --repeats 10)
[[ $quick == 1 ]] && args=(--models mlp25m --repeats 5)
log=$out/commit_cuda.log
PYTHONPATH=$pypath timeout 120 "$python" "$root/bench/gpu/commit_cuda.py" "${args[@]}" \
  >"$log" 2>&1 || { tail -20 "$log"; echo "FAIL (commit_cuda): exited $?"; exit 1; }
echo "### Commit of CUDA state: TorchState.commit() against plain copies, one process"
echo
echo "\`bench/gpu/commit_cuda.sh BUILD_DIR OUT_DIR${3:+ $3}\` ($(PYTHONPATH=$pypath "$python" -c \
  'import torch; print(torch.__version__, torch.cuda.get_device_name())'))"
echo
grep '^|' "$log"
