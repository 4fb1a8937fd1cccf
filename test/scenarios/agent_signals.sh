#!/usr/bin/env bash
# Signals to an agent (cohortrun --rdzv-backend etcd), end to end with a real etcd and real
# scenario_trainer workers: SIGTERM to an agent stops its node the way docs/operations.md says,
# its workers told to leave before they get the signal, so they exit 0 at their next commit
# instead of being killed at the end of --term-grace-seconds; and a worker killed by a signal the
# agent passed on (SIGUSR1, SIGUSR2) is no failure of its node.
#   agent_signals.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

case $scenario in
sigterm_agent)  # SIGTERM to node b's agent: its workers exit 0 within the grace, a trains on
  start_etcd 1
  for node in a b; do
    agent $node --nnodes 1:2 --nproc-per-node 2 --event-log "$tmp/$node.events" -- \
      "${trainer[@]}" "${until_stop[@]}"
  done
  home=$(wait_for_any "$(epoch_at 4 0)")
  [[ $home == a ]] || fail "rank 0 is not on node a"
  start=$(date +%s%N)
  kill -TERM "${agents[b]}"
  expect_exit b 143
  took_ms=$((($(date +%s%N) - start) / 1000000))
  echo "agent b stopped ${took_ms} ms after its SIGTERM (--term-grace-seconds 2)"
  ((took_ms < 2000)) || fail "agent b took ${took_ms} ms: its workers waited for the grace"
  expect "$tmp/b.err" "cohortrun: received SIGTERM; stopping the workers"
  grep -q "still running" "$tmp/b.err" && fail "agent b had to kill its workers"
  python3 - "$tmp/b.events" <<'PY' || fail "b's workers did not both exit 0"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exits = sorted((l["worker"], l.get("exit_code"), l.get("signal"), l["verdict"])
               for l in lines if l["event"] == "worker_exit")
assert exits == [("b.0.0", 0, None, "stopped"), ("b.1.0", 0, None, "stopped")], exits
PY
  wait_for "$tmp/a.out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  ;;
usr1_default_dies)  # b's worker put SIGUSR1's default back and dies of the agent's SIGUSR1: no failure
  start_etcd 1
  for node in a b; do
    agent $node --nnodes 1:2 --event-log "$tmp/$node.events" -- "${trainer[@]}" \
      "${until_stop[@]}" --usr1-dies b.0.0
  done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  kill -USR1 "${agents[b]}"
  wait_for "$tmp/b.err" "\[cohortrun\] worker b.0.0 was killed by signal 10 (SIGUSR1), a signal cohortrun passed on: not a failure; its slot starts another"
  wait_for "$tmp/b.out" "\[1\] trainer: start worker=b.0.1 rank=1 size=2 resets=0 epoch=[0-9]*"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  grep -q "blacklisted\|leaves the job" "$tmp/b.err" && fail "node b was counted as failed"
  python3 - "$tmp/b.events" <<'PY' || fail "b's event log is wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exits = [(l["worker"], l.get("signal"), l["verdict"]) for l in lines
         if l["event"] == "worker_exit" and l["worker"] == "b.0.0"]
assert exits == [("b.0.0", "SIGUSR1", "signalled")], exits
assert not [l for l in lines if l["event"] == "blacklist"], "node b was blacklisted"
PY
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
