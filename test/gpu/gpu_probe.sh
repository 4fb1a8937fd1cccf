#!/usr/bin/env bash
# The `gpu` label's smallest test (ctest -L gpu, scripts/gpu/check.sh): lists the GPUs that
# nvidia-smi sees, so the device check's log names them; exits 77 (skipped) when there is none.
if ! command -v nvidia-smi >/dev/null; then
  echo "no GPU: nvidia-smi is not installed"
  exit 77
fi
if ! gpus=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$gpus"; then
  echo "no GPU: nvidia-smi lists none ($(head -1 <<<"$gpus"))"
  exit 77
fi
echo "$gpus"
