#!/usr/bin/env bash
# Agent mode when etcd loses what the agents wrote (issue 26, items 1, 4, 10 and 12): etcd away
# for longer than the lease TTL (frozen, or cut off from every node by a proxy), a live node's
# record deleted or overwritten without the secret, etcd restarted with its data wiped, and
# thousands of junk keys. In each, the job trains on to the end with rank 0's exactly-once check.
#   agent_etcd_loss.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

prefix=/cohort/job-$scenario
ctl() { ETCDCTL_API=3 etcdctl --endpoints "${direct:-$endpoints}" "$@"; }
# One commit per epoch: while etcd is away each commit waits out rank 0's short etcd request.
slow_commits=(--samples 240 --batch 4 --commit-every 30 "${until_stop[@]}")
start_two() {  # start_two TRAINER_ARGS...: agents a and b, --nnodes 2, training in round 0
  for node in a b; do agent $node --nnodes 2 -- "$@"; done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
}
epochs_done() { grep -c "epoch [0-9]* done rank=0" "$tmp/a.out"; }
# outage_ends: etcd answers again (at $back, in ns); both agents lost their lease with the
# other's, so both take a new one and register again, and training goes on in round 0. Prints
# what the outage cost (docs/agents.md, "What each etcd failure costs").
outage_ends() {
  local node
  for node in a b; do
    wait_for "$tmp/$node.err" "\[cohortrun\] node $node's etcd lease expired while etcd was away from every node; it took a new lease and registers again .*"
  done
  echo "outage cost: both agents registered again $((($(date +%s%N) - back) / 1000000)) ms after etcd was back"
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $(($(epochs_done) + 1)) done rank=0 size=2 resets=0"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  expect "$tmp/a.out" "\[0\] trainer: finished epochs=[0-9]* resets=0"
  echo "outage cost: no reset ($(grep "trainer: finished" "$tmp/a.out"))"
  # etcd's "lease not found" is an answer, not an outage.
  grep "etcd cannot be reached.*lease not found" "$tmp/a.err" "$tmp/b.err" &&
    fail "a lease that etcd does not know was reported as etcd being unreachable"
  return 0
}

case $scenario in
etcd_frozen)  # etcd SIGSTOPped for three lease TTLs: every lease expires at once
  start_etcd 1
  start_two "${slow_commits[@]}"
  kill -STOP "${etcd_pids[0]}"
  frozen=$(epochs_done)
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $((frozen + 1)) done rank=0 size=2 resets=0"
  sleep 6  # the outage's length: 3 x --rdzv-lease-ttl 2
  kill -CONT "${etcd_pids[0]}"
  back=$(date +%s%N)
  outage_ends
  ;;
etcd_cut_off)  # every node cut off from etcd (a proxy that stops forwarding) for 3 lease TTLs
  start_etcd 1
  direct=$endpoints
  coproc proxy { exec python3 "$(dirname "$0")/etcd_proxy.py" "${endpoints##*:}" "$tmp/cut"; }
  read -r port <&"${proxy[0]}"
  agents[proxy]=$proxy_PID  # ended with the agents by cleanup
  endpoints=http://127.0.0.1:$port  # the agents' and the workers'
  start_two "${slow_commits[@]}"
  touch "$tmp/cut"
  cut=$(epochs_done)
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $((cut + 1)) done rank=0 size=2 resets=0"
  sleep 6  # the outage's length: 3 x --rdzv-lease-ttl 2
  [[ -z $(ctl get --prefix "$prefix/agents/" --keys-only) ]] ||
    fail "a lease outlived the outage: not the case under test"
  rm "$tmp/cut"
  back=$(date +%s%N)
  outage_ends
  ;;
etcd_cut_off_one)  # only b cut off from etcd (a proxy) for 3 lease TTLs: b alone counts as gone
  start_etcd 1
  direct=$endpoints
  coproc proxy { exec python3 "$(dirname "$0")/etcd_proxy.py" "${endpoints##*:}" "$tmp/cut"; }
  read -r port <&"${proxy[0]}"
  agents[proxy]=$proxy_PID  # ended with the agents by cleanup
  agent a --nnodes 1:2 -- "${trainer[@]}" "${until_stop[@]}"
  endpoints=http://127.0.0.1:$port agent b --nnodes 1:2 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  touch "$tmp/cut"
  # a sees b's record vanish with b's lease, its own lease holds: b is gone, a trains on alone.
  wait_for "$tmp/a.out" "$(epoch_at 1 1)"
  rm "$tmp/cut"
  expect_exit b 1
  expect "$tmp/b.err" "cohortrun: node b's etcd lease expired, so the other agents count it as gone; stopping the workers"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  ;;
record_tampered)  # a's record deleted, then b's overwritten, without the secret
  start_etcd 1
  start_two "${trainer[@]}" "${until_stop[@]}"
  ctl del "$prefix/agents/a" >/dev/null
  wait_for "$tmp/a.err" "\[cohortrun\] the record of node a is missing from etcd or was refused; registering it again"
  ctl put "$prefix/agents/b" "slots=1 workers=" >/dev/null
  wait_for "$tmp/b.err" "\[cohortrun\] the record of node b is missing from etcd or was refused; registering it again"
  wait_for "$tmp/a.out" "\[0\] trainer: epoch $(($(epochs_done) + 1)) done rank=0 size=2 resets=[0-2]"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  # At most one reset for each of the two writes.
  expect "$tmp/a.out" "\[0\] trainer: finished epochs=[0-9]* resets=[0-2]"
  ;;
etcd_wiped)  # etcd killed, its data directory wiped, restarted on the same ports
  start_etcd 1
  start_two "${slow_commits[@]}"
  kill -KILL "${etcd_pids[0]}"
  wait "${etcd_pids[0]}" 2>/dev/null || true
  rm -rf "$tmp/etcd0"
  restart_etcd 0
  back=$(date +%s%N)
  # The first agent to read the empty etcd says so and publishes round 0 again; a later one may
  # find it there already.
  wait_for_any "\[cohortrun\] etcd lost the job's keys (round 0 is gone from it); this node's workers train on in that round, and the agent publishes it again" err >/dev/null
  outage_ends
  [[ -n $(ctl get "$prefix/rounds/0" --keys-only) ]] || fail "round 0 was not published again"
  ;;
junk_keys)  # 5,000 values without the seal under the job's prefix: a bounded number of lines
  start_etcd 1
  start_two "${trainer[@]}" "${until_stop[@]}"
  python3 - "$endpoints" "$prefix/junk/" <<'PY'
import base64, json, sys, urllib.request
b64 = lambda s: base64.b64encode(s.encode()).decode()
for start in range(0, 5000, 100):  # 100 puts per transaction (etcd allows 128)
    puts = [{"requestPut": {"key": b64(f"{sys.argv[2]}{i}"), "value": b64("junk")}}
            for i in range(start, start + 100)]
    body = json.dumps({"success": puts}).encode()
    urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/v3/kv/txn", body)).read()
PY
  # The lead (a or b: the only agent that reads keys no agent acts on) re-reads the job at every
  # change: after the 10 s window, a line with the count.
  wait_for_any ".*rendezvous: refused .*$prefix/junk/.* (repeated [0-9]* more times in the last .*" err >/dev/null
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit b 0
  trained_once a
  for node in a b; do
    lines=$(grep -c "refused .*$prefix/junk/" "$tmp/$node.err" || true)
    # 4 lines per 10 s window, whatever the number of keys: 5,000 lines per read before.
    [[ $lines -ge 1 && $lines -le 16 ]] || fail "node $node wrote $lines refusal lines"
  done
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
