#!/usr/bin/env bash
# Runs bench/torch/step_bench.py for each model, alternating cohort.torch (one group per step,
# and 4 groups overlapping the backward pass) and DDP trials so that all see the same machine
# noise, and prints every RESULT line and the medians per variant.
# Usage: bench/torch/step_bench.sh BUILD_DIR [NP] [TRIALS] [step_bench.py arguments...]
# BENCH_MODELS picks the models (default: "digits mlp25m").
set -euo pipefail
build=${1:?usage: step_bench.sh BUILD_DIR [NP] [TRIALS] [args...]}
np=${2:-2}
trials=${3:-3}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3  # Debian's torch is importable only by the system interpreter
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} GLOO_SOCKET_IFNAME=lo
results=$(mktemp)
trap 'rm -f "$results"' EXIT

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for model in ${BENCH_MODELS:-digits mlp25m}; do
  for trial in $(seq "$trials"); do
    for variant in "cohort" "cohort --num-groups 4" "ddp"; do
      # shellcheck disable=SC2086 # the variant is a mode and its flags
      BENCH_PORT=$(free_port) timeout 600 "$build/bin/cohortrun" -np "$np" \
        "$python" "$here/step_bench.py" --mode $variant --model "$model" "$@" |
        grep -o 'RESULT .*' | tee -a "$results"
    done
  done
done

echo
echo "medians over $trials trials (step_ms: median step of the slowest rank):"
awk '{
  for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  key = f["model"] " " f["mode"] (f["mode"] == "cohort" ? " groups=" f["groups"] : "")
  n[key]++; step[key, n[key]] = f["step_ms"]; sync[key, n[key]] = f["lockstep_sync_ms"]
  raw[key, n[key]] = f["raw_grouped_allreduce_ms"]
}
function median(a, key, k,    v, i, j, t) {
  for (i = 1; i <= k; i++) v[i] = a[key, i] + 0
  for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
  return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}
END {
  for (key in n) {
    line = sprintf("%-16s step_ms %8.2f", key, median(step, key, n[key]))
    if (key ~ /cohort/) line = line sprintf("  lockstep_sync_ms %8.2f  raw_grouped_allreduce_ms %8.2f", median(sync, key, n[key]), median(raw, key, n[key]))
    print line
  }
}' "$results" | sort
