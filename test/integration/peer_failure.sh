#!/usr/bin/env bash
# Failure detection through cohortrun: NP workers train (peer_failure_check); once all of them
# run, this script sends SIGNAL (STOP or KILL) to rank VICTIM and records the time. Every
# survivor must raise an InternalError naming the victim (silent for STOP, its connection closed for
# KILL) within LIMIT seconds of the signal,
# measured between this script's clock and the survivors' (both the realtime clock). Prints each
# survivor's latency. The victim is SIGKILLed at the end whatever happens.
#   peer_failure.sh COHORTRUN WORKER NP VICTIM SIGNAL PEER_TIMEOUT LIMIT [RUNS [FLOATS]]
# FLOATS: the allreduce's size in float32 elements (default 262144, 1 MiB).
set -euo pipefail
cohortrun=$1 worker=$2 np=$3 victim=$4 signal=$5 peer_timeout=$6 limit=$7 runs=${8:-1}
floats=${9:-262144}

case $signal in
  STOP) expected="rank $victim has sent no heartbeat" ;;
  KILL) expected="connection to rank $victim was closed" ;;
  *) echo "SIGNAL must be STOP or KILL" >&2; exit 2 ;;
esac
dir=$(mktemp -d)
launcher= victim_pid=
cleanup() {
  [[ -n $victim_pid ]] && kill -KILL "$victim_pid" 2>/dev/null || true
  [[ -n $launcher ]] && kill -KILL "$launcher" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "FAILED: $*"
  echo "--- cohortrun output:"
  cat "$dir/out" || true
  exit 1
}

one_run() {
  local run=$1 fifo=$dir/report.$1
  mkfifo "$fifo"
  exec 3<>"$fifo"  # read-write, so opening never blocks and writers never see it closed
  COHORT_PEER_TIMEOUT_SECONDS=$peer_timeout "$cohortrun" -np "$np" "$worker" "$fifo" "$floats" \
    >"$dir/out" 2>&1 &
  launcher=$!
  local -A pids=()
  local kind rank rest
  for _ in $(seq "$np"); do
    read -r -t 120 -u 3 kind rank rest || fail "run $run: not every rank started training"
    [[ $kind == ready ]] || fail "run $run: unexpected report before the signal: $kind $rank $rest"
    pids[$rank]=$rest
  done
  victim_pid=${pids[$victim]}
  local sent_ns
  sent_ns=$(date +%s%N)
  kill "-$signal" "$victim_pid"
  local latencies=()
  for _ in $(seq $((np - 1))); do
    read -r -t $((limit + 30)) -u 3 kind rank rest || fail "run $run: a survivor never raised"
    [[ $kind == caught ]] || fail "run $run: unexpected report: $kind $rank $rest"
    local at=${rest%% *} message=${rest#* }
    local ms=$(((at - sent_ns) / 1000000))
    [[ $message == *"$expected"* ]] ||
      fail "run $run: rank $rank's error does not say '$expected': $message"
    ((ms <= limit * 1000)) ||
      fail "run $run: rank $rank raised $ms ms after SIG$signal, over the ${limit} s limit: $message"
    latencies+=("rank $rank: $ms ms")
  done
  kill -KILL "$victim_pid" 2>/dev/null || true
  victim_pid=
  wait "$launcher" || true
  launcher=
  exec 3<&-
  echo "run $run: SIG$signal of rank $victim of $np, survivors raised after ${latencies[*]}"
  echo "  e.g. $message"
}

for run in $(seq "$runs"); do one_run "$run"; done
