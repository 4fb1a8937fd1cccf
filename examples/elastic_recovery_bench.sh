#!/usr/bin/env bash
# Recovery time of elastic training (issue 5's target): NP workers on this machine under
# cohortrun's elastic mode (-H localhost:NP --min-np NP-1), rank 1 SIGKILLed at step 4, the
# survivors recover and complete a step. Prints each trial's phases (maximum over the survivors,
# ms) and the median total.
#   examples/elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [elastic_recovery_bench args...]
# e.g. examples/elastic_recovery_bench.sh build-rel 4 --trials 5            (16 MiB model)
set -euo pipefail
build=${1:?usage: elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [args...]}
np=${2:?usage: elastic_recovery_bench.sh BUILD_DIR NP [--trials T] [args...]}
shift 2
trials=5
if [[ ${1:-} == --trials ]]; then trials=$2; shift 2; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

totals=()
for trial in $(seq "$trials"); do
  rm -f "$work/marker" "$work/killed"
  "$build/bin/cohortrun" -H "localhost:$np" --min-np $((np - 1)) --max-np "$np" \
    "$build/bin/elastic_recovery_bench" --marker "$work/marker" --kill-time-file "$work/killed" \
    "$@" >"$work/out" 2>&1 || { cat "$work/out"; echo "trial $trial: the job failed" >&2; exit 1; }
  line=$(grep -o 'recovery: .*' "$work/out") || { cat "$work/out"; echo "no recovery line" >&2; exit 1; }
  echo "trial $trial: ${line#recovery: }"
  totals+=("$(grep -o 'total=[0-9.]*' <<<"$line" | cut -d= -f2)")
done
median=$(printf '%s\n' "${totals[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "median total over $trials trials, $np workers -> $((np - 1)): $median ms"
