#!/usr/bin/env bash
# Agent mode (cohortrun --rdzv-backend etcd) against a real etcd started here: recovery after the
# SIGKILL of one agent, whose node's workers die with it, and scale-up when an agent joins.
#   bench/agent_recovery_bench.sh BUILD_DIR NODES NPROC [--trials T] [--ttl S] [--scale-up]
#                                 [elastic_recovery_bench args...]
# Recovery: NODES agents of NPROC workers train (elastic_recovery_bench, 16 MiB model); at step 4
# the last rank SIGKILLs its agent; the figure is the time from that kill to the first step of the
# NODES-1 nodes left, which includes waiting for the dead agent's lease (--ttl, default 2 s).
# --scale-up: NODES-1 agents train; the figure is the time from starting one more agent to its
# workers' first step.
set -euo pipefail
build=${1:?usage: agent_recovery_bench.sh BUILD_DIR NODES NPROC [--trials T] [--ttl S] [--scale-up]}
nodes=${2:?NODES} nproc=${3:?NPROC}
shift 3
trials=5 ttl=2 scale_up=""
while [[ ${1:-} == --trials || ${1:-} == --ttl || ${1:-} == --scale-up ]]; do
  case $1 in
  --trials) trials=$2; shift 2 ;;
  --ttl) ttl=$2; shift 2 ;;
  --scale-up) scale_up=1; shift ;;
  esac
done
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export COHORT_SECRET
COHORT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

source "$(dirname "$0")/bench_etcd.sh"
start_bench_etcd b "$work"
pids+=("$etcd_pid")
wait_bench_etcd

agent() {  # agent TRIAL NODE BENCH_ARGS...: one agent in the background
  local trial=$1 node=$2
  shift 2
  "$build/bin/cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoint" \
    --rdzv-id "bench-$trial" --node-name "n$node" --node-address 127.0.0.1 \
    --rdzv-lease-ttl "$ttl" --nnodes "1:$nodes" --nproc-per-node "$nproc" \
    "$build/bin/elastic_recovery_bench" "$@" >>"$work/out" 2>&1 &
  pids+=($!)
}
wait_lines() {  # wait_lines REGEX N: N lines of the output match, within 120 s
  for _ in $(seq 2400); do
    [[ $(grep -c -- "$1" "$work/out") -ge $2 ]] && return 0
    sleep 0.05
  done
  tail -30 "$work/out"; echo "timed out waiting for $2 x '$1'" >&2; exit 1
}
stop_all() {
  for pid in "${pids[@]:1}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]:1}"; do wait "$pid" 2>/dev/null || true; done
  pids=("${pids[0]}")
}

results=()
for trial in $(seq "$trials"); do
  : >"$work/out"
  rm -f "$work/marker" "$work/killed"
  if [[ -z $scale_up ]]; then
    for n in $(seq "$nodes"); do
      agent "$trial" "$n" --steps 30 --kill-rank -1 --kill-parent 1 --marker "$work/marker" \
        --kill-time-file "$work/killed" "$@"
    done
    wait_lines 'recovery: ' 1
    line=$(grep -o 'recovery: .*' "$work/out")
    echo "trial $trial: ${line#recovery: }"
    results+=("$(grep -o 'total=[0-9.]*' <<<"$line" | cut -d= -f2)")
  else
    for n in $(seq $((nodes - 1))); do agent "$trial" "$n" --kill-step -1 --steps 100000 "$@"; done
    wait_lines 'first-step' $(((nodes - 1) * nproc))
    started=$(date +%s%3N)
    agent "$trial" "$nodes" --kill-step -1 --steps 100000 "$@"
    wait_lines 'first-step' $((nodes * nproc))
    stepped=$(grep -o 'first-step: wall=[0-9]*' "$work/out" | tail -1 | cut -d= -f2)
    echo "trial $trial: agent started -> its workers' first step: $((stepped - started)) ms"
    results+=($((stepped - started)))
  fi
  stop_all
done
median=$(printf '%s\n' "${results[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
what="recovery $nodes -> $((nodes - 1)) nodes"
[[ -n $scale_up ]] && what="scale-up $((nodes - 1)) -> $nodes nodes"
echo "median $what of $nproc workers each, lease TTL $ttl s, over $trials trials: $median ms"
