#!/usr/bin/env bash
# Scale-up time of elastic training (issue 5's target: at most the discovery interval + 2 s):
# 2 workers train (elastic_recovery_bench without a kill); the discovery script starts reporting
# a second host and notes when it first did; the new worker prints when its first step completed.
#   bench/elastic_scaleup_bench.sh BUILD_DIR [--trials T] [--interval S] [bench args...]
set -euo pipefail
build=${1:?usage: elastic_scaleup_bench.sh BUILD_DIR [--trials T] [--interval S] [args...]}
shift
trials=3 interval=1
while [[ ${1:-} == --trials || ${1:-} == --interval ]]; do
  [[ $1 == --trials ]] && trials=$2 || interval=$2
  shift 2
done
work=$(mktemp -d)
job=""
trap '[[ -n $job ]] && kill -KILL $job 2>/dev/null; rm -rf "$work"' EXIT

# Prints $work/hosts; the first time the list has two lines it records the wall time (ms).
cat >"$work/discover.sh" <<SCRIPT
#!/bin/sh
cat "$work/hosts"
if [ "\$(wc -l <"$work/hosts")" -gt 1 ] && [ ! -e "$work/reported" ]; then
  echo "\$(date +%s%N)" >"$work/reported.new" && mv "$work/reported.new" "$work/reported"
fi
SCRIPT
chmod +x "$work/discover.sh"

wait_lines() {  # wait_lines REGEX N: N lines of the output match, within 60 s
  for _ in $(seq 1200); do
    [[ $(grep -c -- "$1" "$work/out") -ge $2 ]] && return 0
    sleep 0.05
  done
  cat "$work/out"; echo "timed out waiting for $2 x '$1'" >&2; exit 1
}

results=()
for trial in $(seq "$trials"); do
  rm -f "$work/reported"
  echo localhost:2 >"$work/hosts"
  "$build/bin/cohortrun" --host-discovery-script "$work/discover.sh" \
    --discovery-interval "$interval" --min-np 2 "$build/bin/elastic_recovery_bench" \
    --kill-step -1 --steps 100000 "$@" >"$work/out" 2>&1 &
  job=$!
  wait_lines 'first-step' 2
  printf 'localhost:2\n127.0.0.2:1\n' >"$work/hosts.new" && mv "$work/hosts.new" "$work/hosts"
  wait_lines 'first-step' 3
  kill -TERM "$job"; wait "$job" || true; job=""
  reported=$(($(cat "$work/reported") / 1000000))
  stepped=$(grep -o 'first-step: wall=[0-9]*' "$work/out" | tail -1 | cut -d= -f2)
  results+=($((stepped - reported)))
  echo "trial $trial: new host reported -> its worker's first step: $((stepped - reported)) ms"
done
median=$(printf '%s\n' "${results[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "median scale-up over $trials trials (discovery interval $interval s): $median ms"
