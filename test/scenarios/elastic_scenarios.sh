#!/usr/bin/env bash
# Elastic training end to end: the real cohortrun in elastic mode, real scenario_trainer workers
# (libcohort, Gloo, elastic::run, State, ElasticSampler), failures injected by SIGKILL, SIGSTOP
# or an exception at a chosen step, hosts added and removed by a discovery script. Every scenario
# that completes must end with rank 0's "exactly once" check: the committed history trained each
# sample once per epoch, and the model says so too.
#   elastic_scenarios.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"
source "$(dirname "$0")/worker_pid.sh"

trainer=(--samples 240 --batch 4 --commit-every 2)
fail_at() {  # fail_at STEP RANK HOW: the trainer arguments that inject one failure
  echo --fail-step "$1" --fail-rank "$2" --fail-how "$3" --fail-marker "$tmp/failed"
}
trained_once() {  # the job ended well and rank 0 checked the history
  expect_exit 0
  expect "$tmp/out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
}
epoch_at() {  # epoch_at SIZE RESETS: rank 0 finished an epoch in that world
  echo "\[0\] trainer: epoch [0-9]* done rank=0 size=$1 resets=$2"
}

gone_within() {  # gone_within PID SECONDS: the process has ended by then
  for _ in $(seq $(($2 * 20))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
  fail "process $1 still running $2 s after it was asked to drain"
}
check_events() {  # check_events EVENT...: the event log matches docs/operations.md and has these
  local here
  here=$(dirname "$0")
  python3 "$here/../launcher/check_event_log.py" "$tmp/events.jsonl" \
    "$here/../../docs/operations.md" "$@" >/dev/null || fail "the event log is wrong"
}

case $scenario in
drain_sigterm)  # SIGTERM to one worker mid-epoch: it drains at its next commit, its host leaves
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 --event-log "$tmp/events.jsonl" \
    --metrics-file "$tmp/metrics.prom" -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 4 0)"
  victim=$(worker_pid 3)  # 127.0.0.2 slot 1
  kill -TERM "$victim"
  wait_for "$tmp/err" "\[cohortrun\] worker 3 (rank 3 on 127.0.0.2 slot 1) drained"
  wait_for "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  gone_within "$victim" 10
  wait_for "$tmp/out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  trained_once
  expect_no "$tmp/err" ".*exited with status.*"
  expect_no "$tmp/err" ".*killed by signal.*"
  check_events drain worker_told_exit reset
  epochs=$(sed -n 's/^\[0\] trainer: finished epochs=\([0-9]*\) .*/\1/p' "$tmp/out")
  python3 - "$tmp/events.jsonl" "$tmp/metrics.prom" "$epochs" <<'PY' || fail "the event log's drain is wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
drain = [l for l in lines if l["event"] == "drain"]
assert [(d["host"], d["worker"], d["source"]) for d in drain] == [("127.0.0.2", 3, "worker")], drain
exits = {l["worker"]: l for l in lines if l["event"] == "worker_exit"}
assert exits[3]["exit_code"] == 0 and exits[3]["verdict"] == "stopped", exits[3]
assert exits[2]["exit_code"] == 0 and exits[2]["verdict"] == "stopped", exits[2]
rounds = [l for l in lines if l["event"] == "round"]
assert rounds[1]["cause"] == "drain", rounds[1]
resets = sorted((r["worker"], r["round"], r["old_size"], r["new_size"])
                for r in lines if r["event"] == "reset")
assert resets == [(0, 1, 4, 2), (1, 1, 4, 2)], resets
metrics = dict(l.rsplit(" ", 1) for l in open(sys.argv[2]) if not l.startswith("#"))
samples = [float(v) for k, v in metrics.items() if k.startswith("cohort_samples_committed_total")]
assert samples == [240.0 * int(sys.argv[3])], samples  # rank 0's final report: every epoch
drains = [float(v) for k, v in metrics.items() if k.startswith("cohort_drains_total")]
assert drains == [1.0], drains
PY
  command -v promtool >/dev/null && { promtool check metrics <"$tmp/metrics.prom" ||
    fail "promtool refuses the metrics file"; }
  ;;
drain_discovery)  # the discovery script marks a host ':drain': its workers leave at a commit
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 --event-log "$tmp/events.jsonl" -- "${trainer[@]}" \
    --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 4 0)"
  set_hosts localhost:2 127.0.0.2:2:drain
  wait_for "$tmp/err" "\[cohortrun\] host 127.0.0.2 drains: its workers leave the job at their next commit"
  wait_for "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  wait_for "$tmp/out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  trained_once
  expect_no "$tmp/err" ".*exited with status.*"
  check_events drain
  grep -q '"event":"drain".*"source":"discovery"' "$tmp/events.jsonl" ||
    fail "no drain event from discovery"
  ;;
stop_drains)  # SIGTERM to cohortrun: every worker drains at its next commit and exits 0
  set_hosts localhost:2 127.0.0.2:1
  start "${discovery[@]}" --min-np 1 --event-log "$tmp/events.jsonl" \
    --metrics-file "$tmp/metrics.prom" -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 3 0)"
  kill -TERM "$job"
  expect_exit 143
  expect "$tmp/err" "cohortrun: received SIGTERM; stopping the workers"
  expect_no "$tmp/err" ".*SIGKILL.*"
  check_events drain job_end
  # What the workers had committed when they left, as each says at exit (all alike).
  committed=$(sed -n 's/^\[[0-9]*\] trainer: at exit, samples committed \([0-9]*\)$/\1/p' "$tmp/out" | sort -u)
  [[ $committed =~ ^[0-9]+$ ]] || fail "the workers' committed counts differ or are missing: $committed"
  python3 - "$tmp/events.jsonl" "$tmp/metrics.prom" "$committed" <<'PY' || fail "not every worker drained and exited 0, or the metrics miss the last commit"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exits = [(l["worker"], l.get("exit_code"), l["verdict"]) for l in lines if l["event"] == "worker_exit"]
assert sorted(exits) == [(0, 0, "stopped"), (1, 0, "stopped"), (2, 0, "stopped")], exits
metrics = dict(l.rsplit(" ", 1) for l in open(sys.argv[2]) if not l.startswith("#"))
samples = [float(v) for k, v in metrics.items() if k.startswith("cohort_samples_committed_total")]
assert samples == [float(sys.argv[3])], (samples, sys.argv[3])  # the last commit, not a second old
PY
  ;;
mlp_epoch_restart)  # elastic_mlp (as $worker): a drain at an epoch's last commit; the survivor
  # resumes there with no step left, and its epoch line gives the epoch's real loss, not zeros
  set_hosts localhost:1 127.0.0.2:1
  start "${discovery[@]}" --min-np 1 -- --samples 64 --batch 8 --commit-every 4 \
    --step-delay-ms 50 --epochs 4
  wait_for "$tmp/out" "\[0\] elastic_mlp: epoch 0 done: .*world size 2"
  # 4 steps an epoch in a world of 2, a commit every 4: the SIGTERM takes effect at the commit
  # that ends epoch 1, and the survivor resumes at step 8 with nothing left of that epoch.
  victim=$(sed -n 's/^\[1\] elastic_mlp: training: .* host 127.0.0.2, pid \([0-9]*\)$/\1/p' "$tmp/out")
  [[ -n $victim ]] || fail "no pid for the worker on 127.0.0.2"
  kill -TERM "$victim"
  expect_exit 0
  expect "$tmp/out" "\[0\] elastic_mlp: training: rank 0 of 1, epoch 1, step 8, resets 1, .*"
  expect "$tmp/out" "\[0\] elastic_mlp: epoch 1 done: loss [0-9.]*, accuracy [0-9.]*, 64/64 samples trained exactly once, world size 1"
  expect_no "$tmp/out" ".*loss 0.0000, accuracy 0.0000.*"
  expect "$tmp/out" "\[0\] elastic_mlp: summary: 4 epochs, .*every sample of every epoch trained exactly once: yes"
  ;;
add_remove)  # a host joins (the job grows to 3), trains, then leaves (back to 2)
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 2 0)"
  set_hosts localhost:2 127.0.0.3:1
  wait_for "$tmp/err" "$(round 1 'size 3: .*')"
  wait_for "$tmp/out" "$(epoch_at 3 1)"
  set_hosts localhost:2
  wait_for "$tmp/err" "$(round 2 'size 2: .*')"
  wait_for "$tmp/out" "$(epoch_at 2 2)"
  touch "$tmp/stop"
  trained_once
  expect "$tmp/out" "\[2\] trainer: start worker=2 rank=2 size=3 resets=0 epoch=[0-9]*"
  ;;
kill_one_host)  # SIGKILL of rank 2 on localhost:4: its slot is retired, 3 workers go on
  set_hosts localhost:4
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" $(fail_at 7 2 kill)
  trained_once
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 3 localhost:3')"
  expect "$tmp/out" "\[0\] trainer: finished epochs=3 resets=1"
  ;;
throw_two_hosts)  # rank 0 throws on a two-host job: worker 1 becomes rank 0, 3 go on
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" $(fail_at 5 0 throw)
  trained_once
  expect "$tmp/err" "\[cohortrun\] worker 0 (rank 0 on localhost slot 0) (pid [0-9]*) exited with status 3"
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 1 localhost:1, \[1\] worker 2 127.0.0.2:0, \[2\] worker 3 127.0.0.2:1')"
  ;;
fixed_hosts)  # fault tolerance without scaling: -H localhost:3 --min-np 2, rank 1 killed
  start -H localhost:3 --min-np 2 -- "${trainer[@]}" $(fail_at 4 1 kill)
  trained_once
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
  ;;
frozen)  # SIGSTOP of rank 1: the peers' heartbeats miss it, the launcher kills it, 2 go on
  set_hosts localhost:3
  COHORT_PEER_TIMEOUT_SECONDS=1 start "${discovery[@]}" --min-np 2 --checkin-timeout 3 -- \
    "${trainer[@]}" $(fail_at 6 1 stop)
  trained_once
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
  ;;
frozen_collective)  # SIGSTOP of worker 1 as its first collective starts, the others inside it
  # (through shared memory: one host): the heartbeat names it, the others fail that collective,
  # the launcher kills the frozen worker, 2 go on.
  set_hosts localhost:3
  COHORT_PEER_TIMEOUT_SECONDS=1 COHORT_FAULT_KILL_AT=stop:collective:0:1 start "${discovery[@]}" \
    --min-np 2 --checkin-timeout 3 -- "${trainer[@]}"
  trained_once
  expect "$tmp/err" ".*cohort: COHORT_FAULT_KILL_AT: worker 1 stopped at collective of entry 0 at .*"
  expect "$tmp/err" ".*rank 1 has sent no heartbeat.*"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
  ;;
blacklist_return)  # the only worker of 127.0.0.2 dies: blacklisted, then back after its cooldown
  set_hosts localhost:1 127.0.0.2:1
  start "${discovery[@]}" --min-np 1 --blacklist-cooldown-range 0.5 1 -- "${trainer[@]}" \
    --until-file "$tmp/stop" --step-delay-ms 2 $(fail_at 5 1 kill)
  wait_for "$tmp/err" "$(round 1 'size 1: .*')"
  wait_for "$tmp/err" "$(round 2 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 127.0.0.2:0')"
  wait_for "$tmp/out" "$(epoch_at 2 2)"
  touch "$tmp/stop"
  trained_once
  expect "$tmp/err" ".*blacklisting host 127.0.0.2 (every worker on it has failed) for .*"
  ;;
bad_discovery)  # garbage and a failing script mid-run: logged, the job trains on unchanged
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 2 0)"
  set_hosts "this is not a host list!"
  wait_for "$tmp/err" "\[cohortrun\] host discovery script '.*' printed an unusable host list: .*"
  touch "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] host discovery script '.*' exited with status 3; .*"
  set_hosts localhost:2
  rm "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] the host discovery script works again"
  touch "$tmp/stop"
  trained_once
  expect_no "$tmp/err" "$(round 1 '.*')"
  ;;
empty_discovery)  # the script prints nothing once: the workers train on, nothing restarts
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 2 0)"
  set_hosts
  wait_for "$tmp/err" "\[cohortrun\] the host discovery script lists 0 usable slots, fewer than --min-np 2; keeping the running workers' hosts for up to --elastic-timeout 600 s while hosts return"
  set_hosts localhost:2
  wait_for "$tmp/err" "\[cohortrun\] the host discovery script lists enough slots again"
  touch "$tmp/stop"
  trained_once
  expect_no "$tmp/err" "$(round 1 '.*')"
  expect_no "$tmp/err" ".*told it to exit.*"
  ;;
empty_discovery_timeout)  # ... but not for longer than --elastic-timeout
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 --elastic-timeout 1 -- "${trainer[@]}" --until-file \
    "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "$(epoch_at 2 0)"
  set_hosts
  expect_exit 1
  expect "$tmp/err" "cohortrun: the host discovery script has listed fewer than --min-np 2 slots for --elastic-timeout 1 s; stopping the workers"
  ;;
second_failure_*)  # rank 1 dies; a member of the next round dies while that round forms
  # second_failure_PHASE[_rank2][_loaded]: worker 0 (rank 0 of the next round), or worker 3 (its
  # rank 2) with _rank2, kills itself at PHASE of its entry 1 (checkin, assignment, gloo-store,
  # gloo-pairs, shared-memory, control, heartbeat, sync, collective; core/fault_injection.h); _loaded keeps
  # both cores busy meanwhile. The survivors must be told at once (the launcher abandons the
  # round) rather than wait out COHORT_TIMEOUT_SECONDS (20 s here) in a connect or an accept.
  phase=${scenario#second_failure_}
  phase=${phase%_loaded}
  victim=0 left='\[0\] worker 2 localhost:2, \[1\] worker 3 localhost:3'
  if [[ $phase == *_rank2 ]]; then
    phase=${phase%_rank2} victim=3 left='\[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2'
  fi
  if [[ $scenario == *_loaded ]]; then
    for _ in 1 2; do (trap 'exit 0' TERM; while :; do :; done) & done
    trap 'kill $(jobs -p) 2>/dev/null || true; cleanup' EXIT
  fi
  set_hosts localhost:4
  COHORT_FAULT_KILL_AT="$phase:1:$victim" start "${discovery[@]}" --min-np 1 -- "${trainer[@]}" \
    --step-delay-ms 2 $(fail_at 5 1 kill)
  wait_for "$tmp/err" ".*cohort: COHORT_FAULT_KILL_AT: worker $victim killed at $phase of entry 1 at .*"
  second=$(date +%s%N)
  # Round 1 when the victim died before checking in (it was never in it), else round 2.
  wait_for "$tmp/err" "$(round '[12]' "size 2: $left")"
  regrouped=$(( ($(date +%s%N) - second) / 1000000 ))
  # Well under a second here; the bound only tells it from a connect timeout (20 s).
  (( regrouped < 5000 )) || fail "the survivors regrouped $regrouped ms after the second death"
  trained_once
  expect_no "$tmp/err" ".*did not check in within --checkin-timeout.*"
  echo "regrouped $regrouped ms after the second death"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
