#!/usr/bin/env bash
# Agent mode end to end: a real etcd started here on loopback ports, one real cohortrun agent per
# "node" (--rdzv-backend etcd, each its own process), real scenario_trainer workers (libcohort,
# Gloo, elastic::run, ElasticSampler). Agents and etcd members are killed with SIGKILL at chosen
# points; every scenario that completes ends with rank 0's "exactly once" check.
#   agent_scenarios.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

case $scenario in
two_agents)  # two nodes of two workers form one world of 4 and train to the end
  start_etcd 1
  for node in a b; do agent $node --nnodes 2 --nproc-per-node 2 -- "${trainer[@]}" "${until_stop[@]}"; done
  wait_for "$tmp/a.out" "\[0\] trainer: start worker=a.0.0 rank=0 size=4 resets=0 epoch=0"
  # A second agent named a, while a lives, is refused (after a lease TTL of its own, which an
  # agent restarted after a crash waits for its predecessor's lease to run out) and starts nothing.
  rc=0
  "$cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoints" --rdzv-id "job-$scenario" \
    --node-name a --node-address 127.0.0.1 --nnodes 2 --rdzv-lease-ttl 1 -- "$worker" \
    "${trainer[@]}" >"$tmp/dup.log" 2>&1 || rc=$?
  touch "$tmp/stop"
  [[ $rc == 2 ]] || fail "a second agent named a exited $rc, expected 2"
  expect "$tmp/dup.log" "cohortrun: node name 'a' is held by another live agent of job 'job-two_agents' (give each agent its own --node-name)"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  expect "$tmp/a.out" "\[0\] trainer: start worker=a.0.0 rank=0 size=4 resets=0 epoch=0"
  expect "$tmp/b.out" "\[3\] trainer: start worker=b.1.0 rank=3 size=4 resets=0 epoch=0"
  [[ $(grep -c "trainer: start" "$tmp/a.out" "$tmp/b.out" | awk -F: '{s += $2} END {print s}') == 4 ]] ||
    fail "more than the 4 workers started"
  ;;
kill_agent)  # SIGKILL of one of three agents: its lease expires, the other two go on
  start_etcd 1
  for node in a b c; do agent $node --nnodes 2:3 --nproc-per-node 2 -- "${trainer[@]}" "${until_stop[@]}"; done
  # The first round waits for all three (the last call): find rank 0 once all six train.
  home=$(wait_for_any "$(epoch_at 6 '[0-9]*')")
  victim=c
  [[ $home == c ]] && victim=b
  kill -KILL "${agents[$victim]}"
  unset "agents[$victim]"
  wait_for "$tmp/$home.out" "$(epoch_at 4 '[0-9]*')"
  touch "$tmp/stop"
  for node in a b c; do [[ $node != "$victim" ]] && expect_exit $node 0; done
  trained_once $home
  grep -h "round [0-9]* (.*): size 4: " "$tmp"/*.err |
    awk -v v=" on $victim" 'index($0, v) == 0 { n++ } END { exit !n }' ||
    fail "no round of the four workers left"
  ;;
kill_planner)  # a worker dies; the agent that claims the next round's planning is SIGKILLed there
  start_etcd 1
  export COHORT_FAULT_AGENT_KILL_AT="1:$tmp/planner-killed"
  for node in a b c; do
    agent $node --nnodes 1:3 -- "${trainer[@]}" --fail-step 6 --fail-rank 2 --fail-how kill \
      --fail-marker "$tmp/failed"
  done
  expect_exit c 1  # its worker (rank 2) failed, and without a cooldown its node leaves
  [[ -e $tmp/planner-killed ]] || { sleep 5; [[ -e $tmp/planner-killed ]] || fail "no planner was killed"; }
  dead=a survivor=b
  grep -q "killed while planning round 1" "$tmp/b.err" && dead=b survivor=a
  wait "${agents[$dead]}" || true
  unset "agents[$dead]"
  expect_exit $survivor 0
  trained_once $survivor
  expect "$tmp/$survivor.err" "\[cohortrun\] round 1 (.*): size 1: \[0\] $survivor.0.0 on $survivor"
  ;;
add_agent)  # a third agent joins mid-training: the job grows from 2 to 3 at a commit
  start_etcd 1
  # No last call: the first round forms with the two, without waiting for a third.
  for node in a b; do
    agent $node --nnodes 2:3 --rdzv-last-call 0 -- "${trainer[@]}" "${until_stop[@]}"
  done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  agent c --nnodes 2:3 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 3 1)"
  touch "$tmp/stop"
  for node in a b c; do expect_exit $node 0; done
  trained_once a
  expect "$tmp/c.out" "\[2\] trainer: start worker=c.0.0 rank=2 size=3 resets=0 epoch=[0-9]*"
  ;;
last_call)  # agents started apart: the first round waits --rdzv-last-call for the third node
  start_etcd 1
  for node in a b; do agent $node --nnodes 1:3 -- "${trainer[@]}" "${until_stop[@]}"; done
  # The first to see MIN nodes ready says so; both wait (the default last call is 30 s).
  wait_for_any "\[cohortrun\] [12] of at most 3 nodes are ready; the first round waits up to --rdzv-last-call 30 s for more" err >/dev/null
  agent c --nnodes 1:3 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 3 0)"
  touch "$tmp/stop"
  for node in a b c; do expect_exit $node 0; done
  trained_once a
  grep -h "round [0-9]* (" "$tmp"/*.err | grep -v "^\[cohortrun\] round 0 (" &&
    fail "a round after the first: the job did not start with all three nodes"
  ;;
max_nodes)  # --nnodes 1:2: a third agent waits outside the job until a node leaves
  start_etcd 1
  for node in a b; do agent $node --nnodes 1:2 -- "${trainer[@]}" "${until_stop[@]}"; done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  agent c --nnodes 1:2 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/c.err" "\[cohortrun\] the job has --nnodes' most nodes; this node waits"
  kill -KILL "${agents[b]}"
  unset "agents[b]"
  wait_for "$tmp/c.out" "\[1\] trainer: start worker=c.0.0 rank=1 size=2 resets=0 epoch=[0-9]*"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit c 0
  trained_once a
  ;;
drain)  # SIGTERM to node b's worker: it drains at its next commit, node b leaves, a trains on
  start_etcd 1
  for node in a b; do
    agent $node --nnodes 1:2 --event-log "$tmp/$node.events" -- "${trainer[@]}" "${until_stop[@]}"
  done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  kill -TERM "$(worker_pid b.0.0)"
  expect_exit b 0
  wait_for "$tmp/a.out" "$(epoch_at 1 1)"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  expect "$tmp/b.err" "\[cohortrun\] worker b.0.0 drained; node b leaves the job"
  expect "$tmp/b.err" "\[cohortrun\] node b drained: every worker left with status 0"
  grep -q "exited with\|killed\|SIGKILL\|failed" "$tmp/a.err" "$tmp/b.err" &&
    fail "a failure was reported"
  grep -q '"event":"drain"' "$tmp/b.events" || fail "no drain event in b's event log"
  ;;
worker_exit0)  # a worker leaves with status 0 mid-training: the job does not end, the rest go on
  start_etcd 1
  for node in a b; do
    agent $node --nnodes 1:2 --nproc-per-node 2 -- "${trainer[@]}" --fail-step 6 --fail-rank 3 \
      --fail-how exit0 --fail-marker "$tmp/failed"
  done
  expect_exit a 0
  expect_exit b 0
  trained_once a
  expect "$tmp/b.err" "\[cohortrun\] worker b.1.0 finished (exit status 0)"
  grep -qx "\[cohortrun\] round 1 (.*): size 3: \[0\] a.0.0 on a, \[1\] a.1.0 on a, \[2\] b.0.0 on b" \
    "$tmp/a.err" "$tmp/b.err" || fail "no round 1 of the three others"
  ;;
min_nodes)  # --nnodes 2 with one node for --elastic-timeout: the agent gives up and says why
  start_etcd 1
  agent a --nnodes 2 --elastic-timeout 2 -- "${trainer[@]}"
  expect_exit a 1
  expect "$tmp/a.err" "cohortrun: only 1 of --nnodes 2 nodes came within --elastic-timeout 2 s; stopping the workers"
  ;;
cooldown)  # b's worker fails: node b sits out its cooldown, then returns with a fresh worker
  start_etcd 1
  for node in a b; do
    agent $node --nnodes 1:2 --blacklist-cooldown-range 1 1 --event-log "$tmp/$node.events" -- \
      "${trainer[@]}" "${until_stop[@]}" \
      --fail-step 6 --fail-rank 1 --fail-how kill --fail-marker "$tmp/failed"
  done
  wait_for "$tmp/b.err" "\[cohortrun\] node b is blacklisted for 1 s"
  wait_for "$tmp/b.out" "\[1\] trainer: start worker=b.0.1 rank=1 size=2 resets=0 epoch=[0-9]*"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  # --event-log: each agent's own, checked against docs/operations.md.
  here=$(dirname "$0")
  python3 "$here/../launcher/check_event_log.py" "$tmp/b.events" "$here/../../docs/operations.md" \
    job_start worker_start round worker_exit blacklist job_end >/dev/null ||
    fail "node b's event log does not match docs/operations.md"
  python3 - "$tmp/b.events" <<'PY' || fail "node b's event log has wrong fields"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert {(l["job"], l["node"]) for l in lines} == {("job-cooldown", "b")}
black = [l for l in lines if l["event"] == "blacklist"]
assert [(b["host"], b["cooldown_seconds"]) for b in black] == [("b", 1.0)], black
failed = [l for l in lines if l["event"] == "worker_exit" and l["verdict"] == "failed"]
assert [(f["worker"], f["signal"]) for f in failed] == [("b.0.0", "SIGKILL")], failed
PY
  ;;
reset_limit)  # --reset-limit 0: the first failure stops the job on every node
  start_etcd 1
  for node in a b c; do
    agent $node --nnodes 2:3 --reset-limit 0 -- "${trainer[@]}" --fail-step 6 --fail-rank 2 \
      --fail-how kill --fail-marker "$tmp/failed"
  done
  expect_exit c 1
  expect_exit a 1
  expect_exit b 1
  grep -qx "cohortrun: round 1: the reset limit of 0 was exceeded (round 1); stopping the workers" \
    "$tmp/a.err" || fail "a did not stop for the reset limit"
  ;;
tls)  # etcd over https with client certificates: agents and workers both speak TLS to it
  start_etcd 1 tls
  tls=(--rdzv-ca-file "$tmp/tls/ca.crt" --rdzv-cert-file "$tmp/tls/client.crt"
    --rdzv-key-file "$tmp/tls/client.key")
  for node in a b; do agent $node --nnodes 2 "${tls[@]}" -- "${trainer[@]}"; done
  expect_exit a 0
  expect_exit b 0
  trained_once a
  # Without the CA, etcd's certificate does not verify: the agent says so at once.
  agent c --nnodes 1 --rdzv-cert-file "$tmp/tls/client.crt" --rdzv-key-file "$tmp/tls/client.key" \
    -- "${trainer[@]}"
  expect_exit c 2
  expect "$tmp/c.err" "cohortrun: agent for node 'c' of job 'job-tls' cannot start: .*certificate.*"
  ;;
forged)  # values written into etcd without the secret, or moved to another key, are refused
  start_etcd 1
  for node in a b; do agent $node --nnodes 2 -- "${trainer[@]}" "${until_stop[@]}"; done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  prefix=/cohort/job-$scenario
  etcd_put() { ETCDCTL_API=3 etcdctl --endpoints "$endpoints" put "$@" >/dev/null; }
  etcd_put "$prefix/agents/evil" "slots=1 workers=evil.0.0"  # forged: not sealed at all
  sealed=$(ETCDCTL_API=3 etcdctl --endpoints "$endpoints" get --print-value-only "$prefix/rounds/0")
  etcd_put "$prefix/rounds/1" "$sealed"  # replayed: sealed, but for rounds/0
  # Another node's record is read by the job's lead alone (a or b); the rounds by every agent.
  wait_for_any ".*refused.*$prefix/agents/evil.*" err >/dev/null
  wait_for "$tmp/a.err" ".*refused.*$prefix/rounds/1.*"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  grep -q "round 1" "$tmp/a.err" "$tmp/b.err" && fail "a forged round was followed"
  ;;
etcd_member_loss)  # one of three etcd members is SIGKILLed mid-training: nothing notices
  start_etcd 3
  for node in a b; do agent $node --nnodes 2 -- "${trainer[@]}" "${until_stop[@]}"; done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  kill -KILL "${etcd_pids[0]}"  # the first endpoint, which every request tries first
  wait "${etcd_pids[0]}" 2>/dev/null || true
  # etcdctl gives up on "request timed out" while the two elect a leader: ask again, for 30 s.
  for try in $(seq 30); do
    ETCDCTL_API=3 etcdctl --endpoints "${endpoints#*,}" put /elsewhere/marker x >/dev/null 2>&1 && break
    [[ $try == 30 ]] && fail "the two surviving etcd members do not take writes"
    sleep 1
  done
  finish_with_no_reset
  ;;
etcd_outage)  # the only etcd member is SIGKILLed for longer than the lease TTL, then restarted
  start_etcd 1
  # One commit per epoch: during the outage each commit waits for rank 0's short etcd request.
  for node in a b; do agent $node --nnodes 2 -- --samples 240 --batch 4 --commit-every 30 "${until_stop[@]}"; done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  kill -KILL "${etcd_pids[0]}"
  wait "${etcd_pids[0]}" 2>/dev/null || true
  down=$(grep -c "epoch [0-9]* done rank=0" "$tmp/a.out")
  # Training goes on: two more epochs (each waits out one etcd request of up to 2 s at its
  # commit), and the agents wait for etcd, longer than their lease TTL of 2 s.
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $((down + 1)) done rank=0 size=2 resets=0"
  wait_for "$tmp/a.err" "\[cohortrun\] etcd cannot be reached; the workers train on, and this agent waits for etcd while they run .*"
  wait_for "$tmp/b.err" "\[cohortrun\] etcd cannot be reached; the workers train on, and this agent waits for etcd while they run .*"
  restart_etcd 0
  wait_for "$tmp/a.err" "\[cohortrun\] etcd answers again"
  wait_for "$tmp/b.err" "\[cohortrun\] etcd answers again"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  expect "$tmp/a.out" "\[0\] trainer: finished epochs=[0-9]* resets=0"
  ;;
netns_partition)  # agents in three network namespaces; one is cut off: the other two go on
  make_namespaces
  start_etcd 1
  for node in n2 n3 n4; do
    agent $node --nnodes 2:3 --elastic-timeout 10 -- "${trainer[@]}" "${until_stop[@]}"
  done
  home=$(wait_for_any "$(epoch_at 3 '[0-9]*')")
  victim=n4
  [[ $home == n4 ]] && victim=n3
  expect "$tmp/$home.out" "\[0\] trainer: start worker=$home.0.0 rank=0 size=[23] resets=0 epoch=0"
  ip link set "veth214-${victim#n}" down  # its agent and worker reach nothing any more
  wait_for "$tmp/$home.out" "$(epoch_at 2 '[0-9]*')"
  touch "$tmp/stop"
  for node in n2 n3 n4; do [[ $node != "$victim" ]] && expect_exit $node 0; done
  trained_once $home
  # Cut off, the agent waits for etcd while its worker runs (an etcd outage alone costs no
  # training); its worker, cut off from its peers too, fails once its round's collectives and its
  # check-in through etcd have timed out, and the node leaves the job.
  expect_exit $victim 1
  expect "$tmp/$victim.err" "cohortrun: node $victim leaves the job after worker $victim.0.0 failed (no --blacklist-cooldown-range); stopping the workers"
  ;;
etcd_unreachable)  # nothing listens at the endpoint: a clear error within the request timeout
  closed_port
  agent a --nnodes 1 -- "${trainer[@]}"
  expect_exit a 2
  expect "$tmp/a.err" "cohortrun: agent for node 'a' of job 'job-etcd_unreachable' cannot start: .*${endpoints#http://}.*"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
