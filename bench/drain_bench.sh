#!/usr/bin/env bash
# How long a drain takes (docs/operations.md, "Draining"), with the real scenario_trainer under
# cohortrun's elastic mode on loopback hosts localhost:2 and 127.0.0.2:2:
#   worker: SIGTERM to the worker on 127.0.0.2 slot 1, until that process has exited;
#   job:    SIGTERM to cohortrun (every worker drains), until cohortrun has exited.
# The trainer commits every --commit-every steps of about --step-delay-ms each: the time to the
# next commit is the part of the drain the program controls.
#   bench/drain_bench.sh BUILD_DIR [--trials T] [--commit-every N] [--step-delay-ms MS]
set -euo pipefail
build=${1:?usage: drain_bench.sh BUILD_DIR [--trials T] [--commit-every N] [--step-delay-ms MS]}
shift
trials=3 commit_every=2 delay=2
while (($#)); do
  case $1 in
    --trials) trials=$2 ;;
    --commit-every) commit_every=$2 ;;
    --step-delay-ms) delay=$2 ;;
    *) echo "drain_bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
work=$(mktemp -d)
job=""
trap '[[ -n $job ]] && kill -KILL $job 2>/dev/null; pkill -KILL -f -- "$work/" || true; rm -rf "$work"' EXIT
printf 'localhost:2\n127.0.0.2:2\n' >"$work/hosts"
printf '#!/bin/sh\ncat %s/hosts\n' "$work" >"$work/discover.sh"
chmod +x "$work/discover.sh"
trainer=$build/test/scenarios/scenario_trainer

start() {  # a 4-worker job in the background, once every worker trains
  rm -f "$work/out" "$work/stop"
  "$build/bin/cohortrun" --host-discovery-script "$work/discover.sh" --min-np 1 "$trainer" \
    --samples 240 --batch 4 --commit-every "$commit_every" --step-delay-ms "$delay" \
    --until-file "$work/stop" >"$work/out" 2>"$work/err" &
  job=$!
  for _ in $(seq 600); do
    [[ $(grep -c "epoch 0 done" "$work/out" 2>/dev/null) -ge 4 ]] && return 0
    sleep 0.05
  done
  echo "drain_bench: the job did not start" >&2; cat "$work/err" >&2; exit 1
}
pid_of_worker() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/exe" 2>/dev/null) == "$(readlink -f "$trainer")" ]] || continue
    grep -qF -- "$work/" < <(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue  # another job's
    grep -qx "COHORT_WORKER_ID=$1" < <(tr '\0' '\n' <"$p/environ" 2>/dev/null) && { echo "${p#/proc/}"; return; }
  done
}
ms_until_gone() {  # ms_until_gone PID: SIGTERM it, then the milliseconds until it has exited
  local t0
  t0=$(date +%s%N)
  kill -TERM "$1"
  while kill -0 "$1" 2>/dev/null; do sleep 0.001; done
  echo $((($(date +%s%N) - t0) / 1000000))
}

echo "trial worker_ms job_ms (commit every $commit_every steps of ~${delay} ms)"
for trial in $(seq "$trials"); do
  start
  worker=$(ms_until_gone "$(pid_of_worker 3)")
  touch "$work/stop"
  wait "$job" || true
  start
  whole=$(ms_until_gone "$job")
  wait "$job" 2>/dev/null || true
  job=""
  echo "$trial $worker $whole"
done
