#!/usr/bin/env bash
# The sharded optimizer's recovery side by side (issue 39, §4): one job of NP workers training the
# 134M-parameter MLP (models.py mlp134m, bench/torch/zero_bench.py's model) with Adam, where rank 1
# SIGKILLs itself mid-epoch (recovery/common.py), run by each system with its own recovery:
#   cohort-zero        hvd.ZeroRedundancyOptimizer: the moments sharded, committed in memory with
#                      a replica on another rank; cohortrun's elastic mode goes on at NP-1 (the
#                      killed worker's slot retired: analyze.py's kind shrink)
#   cohort-replicated  hvd.DistributedOptimizer(Adam) + TorchState, the same elastic run
#   torch-zero         torch's ZeroRedundancyOptimizer under DDP and torchrun --max-restarts 3
#                      (restart-all), resuming from its DCP checkpoint (recovery_torch.py)
# Cohort on Debian's torch 1.13 (/usr/bin/python3), torch's ZeRO in the torch 2.x venv of
# scripts/torch2-env.sh (Debian's torchrun 1.13 fails in Python 3.11: to_map(None)), the same
# model, data and commit interval. analyze.py
# turns each run's log into a RESULT line (recovery_s: the kill to the end of the next step,
# at NP-1 for Cohort, at NP for torchrun's restart; lost and duplicated samples of the final
# state).
#
#   bench/peers/recovery/zero.sh BUILD_DIR [NP (4)] [TRIALS (1)] [--samples N --batch B ...]
#
# SYSTEMS (environment) picks some of the three, e.g. SYSTEMS=torch-zero.
# Appends to BUILD_DIR/zero-recovery/results.txt (logs beside it, in logs/) and prints it.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: zero.sh BUILD_DIR [NP] [TRIALS] [program arguments...]}" && pwd) || exit 2
np=${2:-4} trials=${3:-1}
shift $(($# < 3 ? $# : 3))
program=(--model mlp134m --samples 64 --batch 4 --epochs 2 --commit-every 2 --step-delay-ms 0
  --job-size "$np" "$@")
out=$build/zero-recovery
mkdir -p "$out/logs"
: >> "$out/results.txt"
export GLOO_SOCKET_IFNAME=lo PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
run_timeout=${COHORT_PEERS_RUN_TIMEOUT:-900}

launch() {  # launch SYSTEM WORK: one run, its output on stdout
  local system=$1 work=$2
  case $system in
    cohort-zero|cohort-replicated)
      local optimizer=zero
      [ "$system" = cohort-replicated ] && optimizer=adam
      echo "localhost:$np" > "$work/hosts"
      printf '#!/bin/sh\nexec cat %s/hosts\n' "$work" > "$work/discover.sh"
      chmod +x "$work/discover.sh"
      PYTHONPATH=$build/python:$here timeout "$run_timeout" "$build/bin/cohortrun" \
        --host-discovery-script "$work/discover.sh" --discovery-interval 0.2 \
        --min-np $((np - 1)) --max-np "$np" \
        /usr/bin/python3 "$here/recovery/recovery_cohort.py" "${program[@]}" --work "$work" \
        --optimizer "$optimizer" --system "$system" --trial "$trial" ;;
    torch-zero)
      local venv
      venv=$("$here/../../scripts/torch2-env.sh") || return 1
      PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/python" -m torch.distributed.run \
        --standalone --nproc-per-node "$np" --max-restarts 3 "$here/recovery/recovery_torch.py" \
        "${program[@]}" --work "$work" --optimizer zero --system "$system" --trial "$trial" ;;
  esac
}

status=0
for trial in $(seq "$trials"); do
  for system in ${SYSTEMS:-cohort-zero cohort-replicated torch-zero}; do
    log=$out/logs/$system-np$np-t$trial.log
    work=$(mktemp -d "$out/logs/work.XXXXXX")
    echo "zero.sh: $system np=$np trial $trial" >&2
    launch "$system" "$work" > "$log" 2>&1
    rc=$?
    rm -rf "$work"
    kind=shrink
    [ "$system" = torch-zero ] && kind=kill  # restart-all: back at NP
    /usr/bin/python3 "$here/recovery/analyze.py" "$log" --system "$system" --trial "$trial" \
      --np "$np" --kind "$kind" --rc "$rc" >> "$out/results.txt" ||
      { echo "FAILED system=$system np=$np trial=$trial rc=$rc log=$log" >> "$out/results.txt"
        status=1; }
  done
done
cat "$out/results.txt"
exit $status
