#!/usr/bin/env bash
# Round formation among agents on a real etcd: for each N, a fresh job of N `cohortrun` agents
# (agent mode, --nnodes N:N, one worker each) meeting in one etcd member on loopback, started here.
# Each worker is agent_worker: it checks in as an elastic worker does and prints when its
# assignment arrived. The figure runs from starting the first agent (first_ms) and the last one
# (from_last_ms) to the last assignment. All agents run on this machine, so at large N the figure
# includes starting N processes on its cores.
#
#   bench/scale/agent_rounds.sh BUILD_DIR N...      prints a table (run.sh runs it)
#
# AGENT_ROUNDS_LOGS=DIR keeps each job's agents' output (DIR/<N>/<i>.out and .err) and etcd's log
# there, and the agents log at --log-level info (each full read, round and planner hand-over).
set -euo pipefail

build=$(cd "${1:?usage: agent_rounds.sh BUILD_DIR N...}" && pwd)
shift
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do { wait "$pid"; } 2>/dev/null || true; done
  if [[ -n "${AGENT_ROUNDS_LOGS:-}" ]]; then
    mkdir -p "$AGENT_ROUNDS_LOGS"
    tar -C "$work" --exclude=./etcd -cf - . | tar -C "$AGENT_ROUNDS_LOGS" -xf -
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export COHORT_SECRET
COHORT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
source "$(dirname "$0")/../bench_etcd.sh"
start_bench_etcd s "$work"
pids+=("$etcd_pid")
wait_bench_etcd

now_ms() { date +%s%3N; }

# round N: one job of N agents; prints its row.
round() {
  local n=$1 dir=$work/$1 start last done_count=0 agents=() i logging=()
  [[ -n "${AGENT_ROUNDS_LOGS:-}" ]] && logging=(--log-level info)
  mkdir -p "$dir"
  start=$(now_ms)
  for ((i = 0; i < n; i++)); do
    "$build/bin/cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoint" \
      --rdzv-id "scale-$n" --node-name "a$i" --node-address 127.0.0.1 --nnodes "$n:$n" \
      --nproc-per-node 1 "${logging[@]}" "$build/bin/agent_worker" >"$dir/$i.out" 2>"$dir/$i.err" &
    agents+=($!)
  done
  # (the agents' workers print "assigned round=... at_ms=..." into the agents' output)
  pids+=("${agents[@]}")
  last=$(now_ms)
  for _ in $(seq 2400); do  # 120 s
    done_count=$(cat "$dir"/*.out 2>/dev/null | grep -c '^.*assigned round=' || true)
    ((done_count >= n)) && break
    sleep 0.05
  done
  if ((done_count >= n)); then
    local at
    at=$(grep -ho 'at_ms=[0-9]*' "$dir"/*.out | cut -d= -f2 | sort -n | tail -1)
    printf "%7d %10d %13d\n" "$n" $((at - start)) $((at - last))
  else
    printf "%7d %10s %13s\n" "$n" failed failed
  fi
  stop "${agents[@]}"
}

# stop PID...: asks the agents to stop (they stop their workers), then kills what is left after 10 s.
stop() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 200); do
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && break; done
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  for pid in "$@"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "$@"; do { wait "$pid"; } 2>/dev/null || true; done
}

echo "# agents: round formation among cohortrun agents on one etcd member (loopback), one worker each"
printf "%7s %10s %13s\n" agents first_ms from_last_ms
for n in "$@"; do round "$n"; done
