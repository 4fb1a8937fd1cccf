#!/usr/bin/env bash
# Elastic training end to end: the real cohortrun in elastic mode, real scenario_trainer workers
# (libcohort, Gloo, elastic::run, State, ElasticSampler), failures injected by SIGKILL, SIGSTOP
# or an exception at a chosen step, hosts added and removed by a discovery script. Every scenario
# that completes must end with rank 0's "exactly once" check: the committed history trained each
# sample once per epoch, and the model says so too.
#   elastic_scenarios.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/../discovery/elastic_test_lib.sh"

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

case $scenario in
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
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
