#!/usr/bin/env bash
# Recovery time of elastic training (issue 5's target): NP workers on this machine under
# cohortrun's elastic mode (-H localhost:NP --min-np NP-1), rank 1 SIGKILLed at step 4, the
# survivors recover and complete a step. Prints each trial's phases (maximum over the survivors,
# ms) and the median total.
#   bench/elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [--second-failure PHASE]
#                                   [elastic_recovery_bench args...]
# e.g. bench/elastic_recovery_bench.sh build-rel 4 --trials 5            (16 MiB model)
# --second-failure PHASE: worker 0, rank 0 of the round that the survivors form after the kill,
# kills itself at PHASE of joining it (checkin, assignment, gloo-store, gloo-pairs, control,
# heartbeat, sync: COHORT_FAULT_KILL_AT, core/fault_injection.h); the figure is then the time from
# that second death to the first completed step of the world that is left (NP - 2 workers).
set -euo pipefail
build=${1:?usage: elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [args...]}
np=${2:?usage: elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [args...]}
shift 2
trials=5
second=""
if [[ ${1:-} == --trials ]]; then trials=$2; shift 2; fi
if [[ ${1:-} == --second-failure ]]; then second=$2; shift 2; fi
min_np=$((np - 1))
if [[ -n $second ]]; then
  export COHORT_FAULT_KILL_AT="$second:1:0"
  min_np=$((np - 2))
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

totals=()
for trial in $(seq "$trials"); do
  rm -f "$work/marker" "$work/killed"
  "$build/bin/cohortrun" -H "localhost:$np" --min-np "$min_np" --max-np "$np" \
    "$build/bin/elastic_recovery_bench" --marker "$work/marker" --kill-time-file "$work/killed" \
    "$@" >"$work/out" 2>&1 || { cat "$work/out"; echo "trial $trial: the job failed" >&2; exit 1; }
  line=$(grep -o 'recovery: .*' "$work/out") || { cat "$work/out"; echo "no recovery line" >&2; exit 1; }
  if [[ -z $second ]]; then
    echo "trial $trial: ${line#recovery: }"
    totals+=("$(grep -o 'total=[0-9.]*' <<<"$line" | cut -d= -f2)")
    continue
  fi
  died=$(grep -o "killed at $second of entry 1 at [0-9.]*" "$work/out" | awk '{print $NF}') ||
    { cat "$work/out"; echo "trial $trial: worker 0 did not die at $second" >&2; exit 1; }
  stepped=$(grep -o 'at=[0-9.]*' <<<"$line" | cut -d= -f2)
  since=$(awk -v a="$stepped" -v b="$died" 'BEGIN {printf "%.1f", a - b}')
  echo "trial $trial: second death at $second -> first step of size $((np - 2)): $since ms"
  totals+=("$since")
done
median=$(printf '%s\n' "${totals[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
if [[ -n $second ]]; then
  echo "median over $trials trials, $np workers, second death at $second: $median ms"
else
  echo "median total over $trials trials, $np workers -> $((np - 1)): $median ms"
fi
