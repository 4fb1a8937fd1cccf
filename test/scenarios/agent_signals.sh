#!/usr/bin/env bash
# Signals to an agent (cohortrun --rdzv-backend etcd), end to end with a real etcd and real
# scenario_trainer workers: SIGTERM to an agent stops its node the way docs/operations.md says,
# its workers told to leave before they get the signal, so they exit 0 at their next commit
# instead of being killed at the end of --term-grace-seconds; a worker killed by a signal the
# agent passed on (SIGUSR1, SIGUSR2) is no failure of its node; and a stop signal ends every wait of
# the agent for an etcd that refuses connections or holds them, at start and while it runs.
#   agent_signals.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

# stops_on NODE SIG MS: NODE's agent, sent SIG now, exits with 128 + SIG within MS ms of it
# (printed). Waits at most 20 s.
stops_on() {
  local node=$1 sig=$2 limit=$3 pid=${agents[$1]} rc=0 start took
  start=$(date +%s%N)
  kill -"$sig" "$pid"
  for _ in $(seq 2000); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
  kill -0 "$pid" 2>/dev/null && fail "agent $node still running 20 s after SIG$sig"
  wait "$pid" || rc=$?
  took=$((($(date +%s%N) - start) / 1000000))
  unset "agents[$node]"
  echo "agent $node exited $rc ${took} ms after SIG$sig"
  [[ $rc -eq $((128 + $(kill -l "$sig"))) ]] || fail "agent $node exited $rc after SIG$sig"
  ((took < limit)) || fail "agent $node took ${took} ms to stop after SIG$sig (at most $limit)"
}
# stops_at_start NODE SIG: NODE's agent, waiting for etcd at start, stops within 1 s of SIG.
stops_at_start() {
  stops_on "$1" "$2" 1000
  expect "$tmp/$1.err" "cohortrun: received SIG$2 while waiting for etcd at start; stopping (no worker was started)"
}
started() {  # started NODE: NODE's agent said which etcd it waits for (its first request next)
  wait_for "$tmp/$1.err" "\[cohortrun\] agent for node $1 of job job-$scenario on etcd at .*"
}

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
start_refused)  # etcd refuses connections at start: SIGTERM, SIGINT end the agents' retries
  closed_port
  agent a --nnodes 1 -- "${trainer[@]}"
  started a
  stops_at_start a TERM
  agent b --nnodes 1 -- "${trainer[@]}"
  started b
  stops_at_start b INT
  ;;
start_held)  # etcd holds every byte at start (a proxy): the lease grant, then the claim of the id
  start_etcd 1
  start_proxy grant 0  # holds every connection
  agent a --nnodes 1 -- "${trainer[@]}"
  wait_for "$tmp/grant.log" "accepted 1"  # a's lease grant, held
  stops_at_start a TERM
  # The grant is passed on, every later request held: b waits in its claim of the job's id, and
  # the revocation of its lease is not waited for either.
  start_proxy claim 1  # in front of etcd too
  agent b --nnodes 1 -- "${trainer[@]}"
  wait_for "$tmp/claim.log" "accepted 2"
  stops_at_start b INT
  ;;
start_name_held)  # SIGTERM while the agent waits for its node name's holder's lease to expire
  lease_flags=(--rdzv-lease-ttl 10 --checkin-timeout 5)  # a wait of 11 s
  start_etcd 1
  agent a --nnodes 1 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 1 0)"
  # A second agent named a (as a pod restarted while its predecessor still runs), files a2.*.
  "$cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoints" --rdzv-id "job-$scenario" \
    --node-name a --node-address 127.0.0.1 "${lease_flags[@]}" --nnodes 1 "$worker" \
    "${trainer[@]}" >"$tmp/a2.out" 2>"$tmp/a2.err" &
  agents[a2]=$!
  wait_for "$tmp/a2.err" "\[cohortrun\] node name 'a' is held by another agent of job 'job-$scenario'; waiting up to 11 s for its etcd lease to expire (a restarted agent's predecessor)"
  stops_at_start a2 TERM
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  ;;
running_held)  # etcd holds every byte while the job runs: SIGTERM is not held up by etcd
  start_etcd 1
  start_proxy proxy
  agent a --nnodes 1 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 1 0)"
  before=$(wc -l <"$tmp/proxy.log")
  touch "$tmp/proxy.cut"
  wait_for "$tmp/proxy.log" "accepted $((before + 1))"  # a request of the job's, held
  # What the agent tells etcd as it stops gets 0.5 s, its worker --term-grace-seconds (2), its
  # lease's revocation 0.5 s more: a request to etcd took 10 s to fail before.
  stops_on a TERM 4000
  expect "$tmp/a.err" "cohortrun: received SIGTERM; stopping the workers"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
