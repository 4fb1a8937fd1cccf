#!/usr/bin/env bash
# Sharded state end to end: the real cohortrun in elastic mode, real scenario_trainer workers whose
# State holds 1000 "moments" sharded over the ranks (ShardedBuffer, one replica per range on the
# other host), real SIGKILLs at chosen points. Every scenario that completes ends with every rank
# of the last world checking its range ("sharded moments match") and rank 0's exactly-once check.
#   sharded_scenarios.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"
source "$(dirname "$0")/worker_pid.sh"

trainer=(--samples 240 --batch 4 --commit-every 2 --model-size 64 --sharded 1000)
fail_at() {  # fail_at STEP RANK HOW: the trainer arguments that inject one failure
  echo --fail-step "$1" --fail-rank "$2" --fail-how "$3" --fail-marker "$tmp/failed"
}
matched() {  # matched SIZE: the job ended well, and every rank of a world of SIZE checked its range
  expect_exit 0
  expect "$tmp/out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
  for ((r = 0; r < $1; r++)); do
    expect "$tmp/out" "\[$r\] trainer: sharded moments match rank=$r size=$1 range=[0-9]*-[0-9]* received=[0-9]*"
  done
  expect_no "$tmp/err" ".*trainer FAILED.*"
}
two_hosts=(localhost:2 127.0.0.2:2)

case $scenario in
sharded_kill_step)  # SIGKILL of rank 1 mid-step: 3 go on, rank 1's range from its replica
  set_hosts "${two_hosts[@]}"
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" $(fail_at 7 1 kill)
  matched 3
  expect "$tmp/err" "$(round 1 'size 3: .*')"
  ;;
sharded_kill_replicas | sharded_kill_promote)  # SIGKILL of worker 1 as a commit's replica
  # transfer starts (replicas), or once it has started, the replicas on their way (promote).
  set_hosts "${two_hosts[@]}"
  COHORT_FAULT_KILL_AT="${scenario#sharded_kill_}:0:1" start "${discovery[@]}" --min-np 2 -- \
    "${trainer[@]}"
  matched 3
  expect "$tmp/err" ".*COHORT_FAULT_KILL_AT: worker 1 killed at ${scenario#sharded_kill_} of entry 0.*"
  back="cohort WARNING: sync: sharded value 'moments': commit 1 cannot be restored: no rank of this world holds elements .* (its replicas had not all arrived); every rank goes back to commit 0 and trains again what was committed after it"
  if [[ $scenario == sharded_kill_replicas ]]; then
    # killed before its own copy of commit 1 was taken: nobody ever held its range of commit 1,
    # so the survivors go back to the generation before, which every rank kept
    for r in 0 1 2; do expect "$tmp/err" "\[$r\] \[rank $r, worker [0-9]\] $back"; done
  else
    # killed once its transfer started: whether its replica reached the other host before the
    # kill is the kernel's to decide (a range this small is one write). Both ends are right, and
    # every rank must take the same one: all three go back to commit 0, or none does.
    went_back=$(grep -cx -- "\[[0-2]\] \[rank [0-2], worker [0-9]\] $back" "$tmp/err" || true)
    [[ $went_back == 0 || $went_back == 3 ]] ||
      fail "$went_back of 3 ranks went back to commit 0; the ranks must agree"
  fi
  ;;
sharded_kill_promote_waiting)  # the same kill with COHORT_STATE_OVERLAP_DISABLE=1: the replicas
  # arrived and the commit waits at its barrier, so no rank counts it and nobody goes back
  set_hosts "${two_hosts[@]}"
  COHORT_STATE_OVERLAP_DISABLE=1 COHORT_FAULT_KILL_AT="promote:0:1" start "${discovery[@]}" \
    --min-np 2 -- "${trainer[@]}"
  matched 3
  expect "$tmp/err" ".*COHORT_FAULT_KILL_AT: worker 1 killed at promote of entry 0.*"
  expect_no "$tmp/err" ".*goes back to commit.*"
  ;;
sharded_host_removed)  # the discovery script drops 127.0.0.2 (2 ranks): 2 go on with all ranges
  set_hosts "${two_hosts[@]}"
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "\[0\] trainer: epoch 0 done rank=0 size=4 resets=0"
  set_hosts localhost:2
  wait_for "$tmp/err" "$(round 1 'size 2: .*')"
  wait_for "$tmp/out" "\[0\] trainer: epoch [0-9]* done rank=0 size=2 resets=1"
  touch "$tmp/stop"
  matched 2
  ;;
sharded_grow)  # 2 -> 4: the new ranks get their ranges from the old ones
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "\[0\] trainer: epoch 0 done rank=0 size=2 resets=0"
  set_hosts "${two_hosts[@]}"
  wait_for "$tmp/err" "$(round 1 'size 4: .*')"
  # only the new ranks' ranges travel (250 doubles each); the old ranks hold theirs
  wait_for "$tmp/out" "\[3\] trainer: sharded moments match rank=3 size=4 range=750-1000 received=2000"
  expect "$tmp/out" "\[2\] trainer: sharded moments match rank=2 size=4 range=500-750 received=2000"
  expect "$tmp/out" "\[1\] trainer: sharded moments match rank=1 size=4 range=250-500 received=0"
  wait_for "$tmp/out" "\[0\] trainer: epoch [0-9]* done rank=0 size=4 resets=1"
  touch "$tmp/stop"
  matched 4
  ;;
sharded_two_failures)  # rank 1 dies mid-step; worker 2 dies as the next round reshards: 2 go on
  set_hosts "${two_hosts[@]}"
  COHORT_FAULT_KILL_AT="reshard:1:2" start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" \
    $(fail_at 5 1 kill)
  matched 2
  expect "$tmp/err" ".*COHORT_FAULT_KILL_AT: worker 2 killed at reshard of entry 1.*"
  ;;
sharded_lost)  # ranks 0 and 2, which keep each other's replicas, killed together: every
  # survivor names the ranges that are gone, with their holders, and the job ends
  set_hosts "${two_hosts[@]}"
  start "${discovery[@]}" --min-np 2 -- "${trainer[@]}" --until-file "$tmp/stop" --step-delay-ms 2
  wait_for "$tmp/out" "\[0\] trainer: epoch 0 done rank=0 size=4 resets=0"
  kill -KILL "$(worker_pid 0)" "$(worker_pid 2)"
  expect_exit 1
  for r in 0 1; do
    expect "$tmp/err" "\[$r\] trainer: sharded value 'moments': commit [0-9]* cannot be restored: no rank of this world holds elements \[0, 250) (rank 0 on 127.0.0.1, replica on rank 2 on 127.0.0.2) or elements \[500, 750) (rank 2 on 127.0.0.2, replica on rank 0 on 127.0.0.1), as the last world of 4 ranks held them; every copy of them is gone"
  done
  ;;
sharded_lost_checkpoint)  # the same loss with a durable checkpoint saved after every epoch:
  # the survivors load it (each its new range, from the parts that hold it) and train on
  set_hosts "${two_hosts[@]}"
  start "${discovery[@]}" --min-np 2 --event-log "$tmp/events.jsonl" -- "${trainer[@]}" \
    --until-file "$tmp/stop" --step-delay-ms 2 --checkpoint-dir "$tmp/ckpt"
  wait_for "$tmp/out" "\[0\] trainer: saved checkpoint 1 epoch=1"
  kill -KILL "$(worker_pid 0)" "$(worker_pid 2)"
  wait_for "$tmp/err" "\[0\] \[rank 0, worker 1\] cohort WARNING: elastic::run: restored from checkpoint $tmp/ckpt/ckpt-[0-9]*.cohort (commit [0-9]*): what was committed after it is trained again"
  wait_for "$tmp/out" "\[0\] trainer: epoch [0-9]* done rank=0 size=2 resets=1"
  touch "$tmp/stop"
  matched 2
  expect "$tmp/err" "\[0\] \[rank 0, worker 1\] cohort WARNING: elastic::run: sharded value 'moments': commit [0-9]* cannot be restored: .*; loading the newest checkpoint of $tmp/ckpt"
  # the launcher's event log has the restore once, with the checkpoint and commit of the log line
  python3 "$(dirname "$0")/../launcher/check_event_log.py" "$tmp/events.jsonl" \
    "$(dirname "$0")/../../docs/operations.md" checkpoint_restore >/dev/null || fail "the event log is wrong"
  line=$(grep '"event":"checkpoint_restore"' "$tmp/events.jsonl")
  [[ $(grep -c '"event":"checkpoint_restore"' "$tmp/events.jsonl") == 1 ]] || fail "not one restore: $line"
  commit=$(sed -n 's/.*restored from checkpoint .* (commit \([0-9]*\)).*/\1/p' "$tmp/err" | sed -n 1p)
  sequence=$(sed -n 's/.*restored from checkpoint .*ckpt-0*\([0-9]*\)\.cohort.*/\1/p' "$tmp/err" | sed -n 1p)
  [[ $line == *'"commit":'"$commit"* && $line == *'"sequence":'"$sequence"* && $line == *'"restores":1'* ]] ||
    fail "the restore event does not match the log (commit $commit, checkpoint $sequence): $line"
  ;;
sharded_bad_replicas)  # COHORT_STATE_REPLICAS not below the world size: refused on every rank
  COHORT_STATE_REPLICAS=2 start -np 2 -- "${trainer[@]}"
  expect_exit 1
  for r in 0 1; do
    expect "$tmp/err" "\[$r\] trainer: COHORT_STATE_REPLICAS=2 must be below the world size (2)"
  done
  ;;
sharded_too_short)  # fewer elements than ranks: refused on every rank
  start -np 3 -- --samples 48 --sharded 2
  expect_exit 1
  for r in 0 1 2; do
    expect "$tmp/err" "\[$r\] trainer: sharded value 'moments' has 2 elements, fewer than the 3 ranks of this world: every rank needs at least one"
  done
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
