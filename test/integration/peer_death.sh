#!/usr/bin/env bash
# A dying peer never kills a survivor by signal: runs a 4-worker job RUNS times in which rank 2
# SIGKILLs itself mid-allreduce, and requires all 3 survivors to report an InternalError each time.
# (Without SIGPIPE handling, 6 of 53 such runs lost a survivor to SIGPIPE on this machine.)
set -euo pipefail
cohortrun=$1 worker=$2 runs=${3:-10}
for run in $(seq "$runs"); do
  out=$("$cohortrun" -np 4 "$worker" 2 $((run % 4 + 2)) 2>&1 || true)
  survived=$(grep -c "survived" <<<"$out" || true)
  if [[ $survived -ne 3 ]] || grep -q "signal 13\|SIGPIPE" <<<"$out"; then
    echo "run $run: expected 3 survivors, got $survived. Output:"
    echo "$out"
    exit 1
  fi
done
echo "peer_death: $runs runs, 3 of 3 survivors raised InternalError in every run"
