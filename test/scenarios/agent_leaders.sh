#!/usr/bin/env bash
# Host leaders (COHORT_CONTROL_LEADERS=1, docs/scaling.md#host-leaders) across hosts: 4 hosts of 2
# workers as network namespaces (10.216.0.2-5 behind a bridge, etcd on 10.216.0.1), one real agent
# per host. A host's leader (its local rank 0, which forwards its host's control messages to rank
# 0) is killed with SIGKILL mid-training: the ranks behind it fail naming it, the job resets
# without that host and every sample is still trained exactly once. Root only; skipped (77)
# elsewhere.
#   agent_leaders.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

case $scenario in
leaders_kill_leader)
  netns_bridge 216 n 2 3 4 5
  etcd_host=10.216.0.1
  start_etcd 1
  export COHORT_CONTROL_LEADERS=1 COHORT_LOG_LEVEL=info
  for node in n2 n3 n4 n5; do
    agent $node --nnodes 3:4 --nproc-per-node 2 -- "${trainer[@]}" "${until_stop[@]}"
  done
  home=$(wait_for_any "$(epoch_at 8 0)")
  victim=n3
  [[ $home == n3 ]] && victim=n4
  # The victim host's worker of local rank 0 leads it: it is rank 2, 4 or 6.
  leader_rank=$(sed -n 's/^\[\([0-9]*\)\] trainer: start worker='"$victim"'\.0\.0 rank=\([0-9]*\) .*/\2/p' \
    "$tmp/$victim.out" | sed -n 1p)
  [[ $leader_rank =~ ^[246]$ ]] || fail "the victim's first worker has rank '$leader_rank'"
  kill -KILL "$(worker_pid $victim.0.0)"
  wait_for "$tmp/$home.out" "$(epoch_at 6 '[0-9]*')"
  touch "$tmp/stop"
  for node in n2 n3 n4 n5; do [[ $node != "$victim" ]] && expect_exit $node 0; done
  trained_once $home
  expect_exit $victim 1
  # Rank 0 names the dead leader, its host and the ranks behind it (heard first on its heartbeat
  # or on its control connection to the leader); the rank behind the leader fails with rank 0's
  # verdict, or, should that not come within a second, with its own connection's break, which
  # names its leader and the leader's address.
  named="rank $leader_rank, the leader of host 10\.216\.0\.${victim#n} (ranks $leader_rank to $((leader_rank + 1))) was closed by the peer (did it exit or crash?)"
  expect "$tmp/$home.err" "\[0\] \[rank 0, worker $home\.0\.0\] cohort ERROR: \(heartbeat\|control\) connection to $named"
  mine="control connection to rank $leader_rank, this host's leader at 10\.216\.0\.${victim#n}:[0-9]* was closed by the peer (did it exit or crash?)"
  expect "$tmp/$victim.err" "\[$((leader_rank + 1))\] \[rank $((leader_rank + 1)), worker $victim\.1\.0\] cohort ERROR: \(rank 0 aborted the job: \(heartbeat\|control\) connection to $named\|$mine\)"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
