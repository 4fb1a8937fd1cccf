#!/usr/bin/env bash
# The Python elastic tests: elastic_train.py (cohort.torch as hvd: TorchState, ElasticSampler,
# DistributedOptimizer, @hvd.elastic.run) under cohortrun's elastic mode on localhost:3 with
# --min-np 2; rank 1 SIGKILLs itself mid-epoch, after some uncommitted steps. The job must go on
# with 2 workers and end with rank 0's exactly-once check of the committed history.
# With SCENARIO python_drain, rank 2, alone on a second host, sends itself SIGTERM instead: it
# drains at its next commit, exits 0, and its host leaves; the same checks follow.
# With COHORT_TEST_DEVICE=cuda the workers train on the GPU (elastic_train.py), all sharing it; with
# no usable GPU this prints one SKIP line and exits 77.
# With SCENARIO python_zero the optimizer is a ZeroRedundancyOptimizer (elastic_train.py --zero):
# 4 workers on two hosts, rank 2 SIGKILLs itself, and the sharded Adam state of 4 ranks is
# resharded over the 3 that are left; every step must match the unsharded shadow.
#   elastic_test.sh COHORTRUN PYTHON [python_kill|python_drain|python_zero]
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

if [[ $scenario == python_kill ]]; then
  set_hosts localhost:3
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 --batch 4 \
    --epochs 2 --commit-every 3 --fail-step 7 --fail-rank 1 --fail-marker "$tmp/failed"
  expect_exit 0
  expect "$tmp/out" "\[1\] elastic_train: failing at step 7 as rank 1"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
elif [[ $scenario == python_zero ]]; then
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 --batch 2 \
    --epochs 2 --commit-every 3 --fail-step 7 --fail-rank 2 --fail-marker "$tmp/failed" --zero
  expect_exit 0
  expect "$tmp/out" "\[2\] elastic_train: failing at step 7 as rank 2"
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 3 127.0.0.2:1')"
  for r in 0 1 2; do
    expect "$tmp/out" "\[$r\] elastic_train: zero matched its unsharded shadow at every step.*"
  done
  # rank 1 of the new world takes over part of the dead rank's range: bytes travel to it
  expect "$tmp/out" "\[1\] elastic_train: start rank=1 size=3 resets=1 epoch=[0-9]* reshard_bytes=[1-9][0-9]*"
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
survivors=2
[[ $scenario != python_zero ]] || survivors=3
expect "$tmp/out" "\[0\] elastic_train: start rank=0 size=$survivors resets=1 epoch=[01] reshard_bytes=[0-9]*"
expect "$tmp/out" "\[0\] elastic_train: finished epochs=2 resets=1"
expect "$tmp/out" "\[0\] elastic_train: exactly once: 2 epochs of 60 samples"
echo "PASS ($scenario)"
