#!/usr/bin/env bash
# The Python elastic test: elastic_train.py (cohort.torch as hvd: TorchState, ElasticSampler,
# DistributedOptimizer, @hvd.elastic.run) under cohortrun's elastic mode on localhost:3 with
# --min-np 2; rank 1 SIGKILLs itself mid-epoch, after some uncommitted steps. The job must go on
# with 2 workers and end with rank 0's exactly-once check of the committed history.
#   elastic_test.sh COHORTRUN PYTHON
set -euo pipefail
cohortrun=$1 python=$2 scenario=python_kill
worker=$python
source "$(dirname "$0")/../discovery/elastic_test_lib.sh"

set_hosts localhost:3
start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/elastic_train.py" --samples 60 --batch 4 \
  --epochs 2 --commit-every 3 --fail-step 7 --fail-rank 1 --fail-marker "$tmp/failed"
expect_exit 0
expect "$tmp/out" "\[1\] elastic_train: failing at step 7 as rank 1"
expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
expect "$tmp/out" "\[0\] elastic_train: start rank=0 size=2 resets=1 epoch=1"
expect "$tmp/out" "\[0\] elastic_train: finished epochs=2 resets=1"
expect "$tmp/out" "\[0\] elastic_train: exactly once: 2 epochs of 60 samples"
echo "PASS ($scenario)"
