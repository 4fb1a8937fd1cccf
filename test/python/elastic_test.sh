#!/usr/bin/env bash
# The Python elastic tests: elastic_train.py (cohort.torch as hvd: TorchState, ElasticSampler,
# DistributedOptimizer, @hvd.elastic.run) under cohortrun's elastic mode on localhost:3 with
# --min-np 2; rank 1 SIGKILLs itself mid-epoch, after some uncommitted steps. The job must go on
# with 2 workers and end with rank 0's exactly-once check of the committed history.
# With SCENARIO python_drain, rank 2, alone on a second host, sends itself SIGTERM instead: it
# drains at its next commit, exits 0, and its host leaves; the same checks follow.
# With COHORT_TEST_DEVICE=cuda the workers train on the GPU (elastic_train.py), all sharing it; with
# no usable GPU this prints one SKIP line and exits 77.
# The python_zero* scenarios train with a ZeroRedundancyOptimizer (elastic_train.py --zero; its
# Adam moments sharded, one replica on the other host) on 4 workers over two hosts, and every
# step must match an unsharded shadow, every sample trained exactly once:
#   python_zero          two failures in a row: rank 2 SIGKILLs itself mid-step, worker 3 is
#                        killed as the next round reshards (4 -> 3 -> 2)
#   python_zero_replicas worker 1 killed as its second commit's replica transfer starts (4 -> 3,
#                        one commit back)
#   python_zero_resize   the second host removed by the discovery script (4 -> 2), then back
#                        (2 -> 4)
#   elastic_test.sh COHORTRUN PYTHON [python_kill|python_drain|python_zero*]
set -euo pipefail
cohortrun=$1 python=$2 scenario=${3:-python_kill}
if [[ ${COHORT_TEST_DEVICE:-cpu} == cuda ]]; then
  why=$(cd "$(dirname "$0")" &&
    "$python" -c 'import cohort_test_device as d; print(d.unusable() or "")' 2>&1) ||
    { echo "FAIL: cannot tell whether the GPU is usable: $why"; exit 1; }
  [[ -z $why ]] || { echo "SKIP ($scenario on cuda): $why"; exit 77; }
fi
worker=$python
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"
zero_matched() {  # zero_matched SIZE: every rank of the last world (of SIZE) matched its shadow
  for ((r = 0; r < $1; r++)); do
    expect "$tmp/out" "\[$r\] elastic_train: zero matched its unsharded shadow at every step.*"
  done
  expect "$tmp/out" "\[0\] elastic_train: exactly once: [0-9]* epochs of 60 samples"
  expect_no "$tmp/out" ".*elastic_train: FAILED.*"
}

if [[ $scenario == python_kill ]]; then
  set_hosts localhost:3
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 --batch 4 \
    --epochs 2 --commit-every 3 --fail-step 7 --fail-rank 1 --fail-marker "$tmp/failed"
  expect_exit 0
  expect "$tmp/out" "\[1\] elastic_train: failing at step 7 as rank 1"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
elif [[ $scenario == python_zero ]]; then
  # Two failures in a row: rank 2 (worker 2) dies mid-step, and worker 3 dies as the next round
  # reshards, so the world of 4 goes to 2 with every range held by one of the two left.
  set_hosts localhost:2 127.0.0.2:2
  COHORT_FAULT_KILL_AT="reshard:1:3" start "${discovery[@]}" --min-np 2 -- \
    "$(dirname "$0")/elastic_train.py" --samples 60 --batch 2 --epochs 2 --commit-every 3 \
    --fail-step 7 --fail-rank 2 --fail-marker "$tmp/failed" --zero
  expect_exit 0
  expect "$tmp/out" "\[2\] elastic_train: failing at step 7 as rank 2"
  expect "$tmp/err" ".*COHORT_FAULT_KILL_AT: worker 3 killed at reshard of entry 1.*"
  expect "$tmp/err" "$(round 2 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  zero_matched 2
  # rank 1 takes over ranges it never held: bytes travel to it
  expect "$tmp/out" "\[1\] elastic_train: start rank=1 size=2 resets=2 epoch=[0-9]* reshard_bytes=[1-9][0-9]* kept=model"
elif [[ $scenario == python_zero_replicas ]]; then
  # Worker 1 dies as the replica transfer of its second commit starts (the commit counted on every
  # rank, its range never sent): the 3 left go back to the first commit, the model's snapshot of
  # it included (its buffers kept beside the newer ones), and train again what came after it.
  set_hosts localhost:2 127.0.0.2:2
  COHORT_FAULT_KILL_AT="replicas#2:0:1" start "${discovery[@]}" --min-np 2 -- \
    "$(dirname "$0")/elastic_train.py" --samples 60 --batch 2 --epochs 2 --commit-every 3 --zero
  expect_exit 0
  expect "$tmp/err" ".*COHORT_FAULT_KILL_AT: worker 1 killed at replicas of entry 0.*"
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 2 127.0.0.2:0, \[2\] worker 3 127.0.0.2:1')"
  for r in 0 1 2; do  # the second commit's range of worker 1 had not reached its replica
    expect "$tmp/err" "\[$r\] \[rank $r, worker [0-9]\] cohort WARNING: sync: sharded value 'optimizer\.group0\.exp_avg': commit 2 cannot be restored: .* every rank goes back to commit 1 and trains again what was committed after it"
  done
  # going back a commit, the root sends the model it went back to
  expect "$tmp/out" "\[1\] elastic_train: start rank=1 size=3 resets=1 epoch=[0-9]* reshard_bytes=[0-9]* kept=none"
  zero_matched 3
elif [[ $scenario == python_zero_resize ]]; then
  # The discovery script drops 127.0.0.2 (2 ranks: 4 -> 2), then brings it back (2 -> 4): the
  # new ranks get their ranges from the two that stayed.
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 \
    --batch 2 --epochs 1000 --commit-every 3 --step-delay-ms 20 --until-file "$tmp/stop" --zero
  wait_for "$tmp/out" "\[0\] elastic_train: epoch 0 done rank=0 size=4"
  set_hosts localhost:2
  wait_for "$tmp/out" "\[0\] elastic_train: start rank=0 size=2 resets=1 epoch=[0-9]* reshard_bytes=[0-9]* kept=model"
  wait_for "$tmp/out" "\[0\] elastic_train: epoch [0-9]* done rank=0 size=2"
  set_hosts localhost:2 127.0.0.2:2
  wait_for "$tmp/out" "\[0\] elastic_train: start rank=0 size=4 resets=2 epoch=[0-9]* reshard_bytes=[0-9]* kept=none"
  wait_for "$tmp/out" "\[0\] elastic_train: epoch [0-9]* done rank=0 size=4"
  touch "$tmp/stop"
  expect_exit 0
  for r in 2 3; do  # the new workers: their ranges came from the others
    expect "$tmp/out" "\[$r\] elastic_train: start rank=$r size=4 resets=0 epoch=[1-9][0-9]* reshard_bytes=[1-9][0-9]* kept=none"
  done
  zero_matched 4
else  # python_drain: rank 2, alone on 127.0.0.2, gets SIGTERM mid-epoch and drains
  set_hosts localhost:2 127.0.0.2:1
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 --batch 4 \
    --epochs 2 --commit-every 3 --fail-step 7 --fail-rank 2 --fail-how term \
    --fail-marker "$tmp/failed"
  expect_exit 0
  expect "$tmp/out" "\[2\] elastic_train: draining at step 7 as rank 2"
  expect "$tmp/err" "\[cohortrun\] worker 2 (rank 2 on 127.0.0.2 slot 0) drained"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  expect_no "$tmp/err" ".*exited with status.*"
fi
expect "$tmp/out" "\[0\] elastic_train: device ${COHORT_TEST_DEVICE:-cpu}.*"
if [[ $scenario != python_zero* ]]; then
  # the survivors restored the same commit: the sync sends neither model nor optimizer
  expect "$tmp/out" "\[0\] elastic_train: start rank=0 size=2 resets=1 epoch=[01] reshard_bytes=[0-9]* kept=model,optimizer"
  expect "$tmp/out" "\[0\] elastic_train: finished epochs=2 resets=1"
  expect "$tmp/out" "\[0\] elastic_train: exactly once: 2 epochs of 60 samples"
fi
echo "PASS ($scenario)"
