#!/usr/bin/env bash
# Agent mode against writers and jobs that do not hold the secret (docs/agents.md, "Tampering
# without the secret"): bytes put at the job's round keys, a node restarted with the same
# --node-name, a second job given the same --rdzv-id with another secret. Real etcd, real agents,
# real scenario_trainer workers, as in agent_scenarios.sh.
#   agent_tamper.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"
prefix=/cohort/job-$scenario

# etcd_kv get KEY (prints the value in base64, empty when unset) | etcd_kv put KEY BASE64 |
# etcd_kv del KEY: exact bytes through etcd's JSON gateway, as a writer without the secret would.
etcd_kv() {
  python3 - "${endpoints%%,*}" "$@" <<'PY'
import base64, json, sys, urllib.request
endpoint, op, key = sys.argv[1:4]
def call(path, body):
    request = urllib.request.Request(endpoint + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=5))
k = base64.b64encode(key.encode()).decode()
if op == "get":
    kvs = call("/v3/kv/range", {"key": k}).get("kvs", [])
    print(kvs[0].get("value", "") if kvs else "")
elif op == "put":
    call("/v3/kv/put", {"key": k, "value": sys.argv[4]})
else:
    call("/v3/kv/deleterange", {"key": k})
PY
}
b64() { printf '%s' "$1" | base64 -w0; }
# wait_value KEY BASE64: KEY holds exactly those bytes again within 20 s.
wait_value() {
  for _ in $(seq 200); do
    [[ $(etcd_kv get "$1") == "$2" ]] && return 0
    sleep 0.1
  done
  fail "$1 was not restored within 20 s"
}

case $scenario in
garbage_next_round)  # bytes at rounds/1 and planners/1, then a worker fails: round 1 still forms
  start_etcd 1
  etcd_kv put "$prefix/rounds/1" "$(b64 'any bytes')"
  etcd_kv put "$prefix/planners/1" "$(b64 'mallory')"
  for node in a b; do
    agent $node --nnodes 1:2 -- "${trainer[@]}" --fail-step 6 --fail-rank 1 --fail-how kill \
      --fail-marker "$tmp/failed"
  done
  expect_exit b 1  # its worker (rank 1) failed, and without a cooldown its node leaves
  expect_exit a 0
  trained_once a
  expect "$tmp/a.err" "\[cohortrun\] round 1 (.*): size 1: \[0\] a.0.0 on a"
  # One line for the class of replacements: the second comes within the first's rate limit.
  grep -q "replacing the refused value of '\(planners\|rounds\)/1'" "$tmp/a.err" "$tmp/b.err" ||
    fail "no refused value was replaced"
  ;;
garbage_current_round)  # garbage, truncated, copied, deleted: rounds/0 is repaired, no reset
  start_etcd 1
  started=$SECONDS
  for node in a b; do
    agent $node --nnodes 2 --elastic-timeout 3 -- "${trainer[@]}" "${until_stop[@]}"
  done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
  # Older than --elastic-timeout, where a job that counted a refused round as "no round yet"
  # stopped at once.
  while ((SECONDS - started < 5)); do sleep 0.2; done
  sealed=$(etcd_kv get "$prefix/rounds/0")
  [[ -n $sealed ]] || fail "no rounds/0"
  truncated=$(head -c 40 < <(printf '%s' "$sealed" | base64 -d) | base64 -w0)
  copied=$(etcd_kv get "$prefix/planners/0")  # sealed by the job, for another key
  for bad in "$(b64 garbage)" "$truncated" "$copied"; do
    etcd_kv put "$prefix/rounds/0" "$bad"
    wait_value "$prefix/rounds/0" "$sealed"
  done
  etcd_kv del "$prefix/rounds/0"
  wait_value "$prefix/rounds/0" "$sealed"
  finish_with_no_reset
  grep -q "agent: tampering: etcd no longer holds the record of round 0" "$tmp/a.err" "$tmp/b.err" ||
    fail "the tampering was not logged"
  ;;
restart_same_name)  # a SIGKILLed agent restarted with its --node-name rejoins with new worker ids
  start_etcd 1
  # A lease longer than the check-in timeout: the planner gives up on the dead node's worker
  # (kills/<id>) before the node's lease expires, as with the defaults (10 s, 10 s) it may.
  lease_flags=(--rdzv-lease-ttl 5 --checkin-timeout 1)
  for node in a b c; do agent $node --nnodes 2:3 -- "${trainer[@]}" "${until_stop[@]}"; done
  home=$(wait_for_any "$(epoch_at 3 '[0-9]*')")
  # Neither the node whose output is checked nor the lead (which planned round 0): a dead lead's
  # node is not given up on, it goes with the lead's lease, before anyone can plan without it.
  lead=$(grep -l "^\[cohortrun\] planning round 0:" "$tmp"/[abc].err)
  lead=$(basename "$lead" .err)
  for victim in c b a; do [[ $victim != "$home" && $victim != "$lead" ]] && break; done
  kill -KILL "${agents[$victim]}"
  wait "${agents[$victim]}" 2>/dev/null || true
  unset "agents[$victim]"
  wait_for_any "\[cohortrun\] giving up on worker $victim.0.0: .*" err >/dev/null
  wait_for "$tmp/$home.out" "$(epoch_at 2 '[0-9]*')"
  mv "$tmp/$victim.err" "$tmp/$victim-before.err"
  # Restarted (a pod's restart): it waits out its predecessor's lease, then rejoins.
  agent $victim --nnodes 2:3 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/$victim.out" "\[[0-9]\] trainer: start worker=$victim.0.1 rank=[0-9] size=3 resets=0 epoch=[0-9]*"
  touch "$tmp/stop"
  for node in a b c; do expect_exit $node 0; done
  trained_once $home
  grep -q "worker=$victim.0.0" "$tmp/$victim.out" && fail "the restarted agent reused $victim.0.0"
  grep -q "killing worker" "$tmp/$victim.err" && fail "the restarted agent killed its worker"
  ;;
same_id_other_secret)  # a second job with the id of a running, then an ended, job: refused at once
  start_etcd 1
  agent a --nnodes 1 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 1 0)"
  own=$COHORT_SECRET
  other=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  reuse_id() {  # reuse_id NODE SECRET: an agent with the id job-$scenario; refused within 10 s
    local began=$SECONDS
    COHORT_SECRET=$2
    agent "$1" --nnodes 2 -- "${trainer[@]}"
    COHORT_SECRET=$own
    expect_exit "$1" 2
    ((SECONDS - began < 10)) || fail "agent $1 was refused only after $((SECONDS - began)) s"
  }
  reuse_id b "$other"
  keys="its keys under $prefix/ are sealed with another secret: a second job given the same id, or a re-run with a new secret"
  free="give this job a new --rdzv-id, or free the id once nothing uses it (etcdctl del --prefix $prefix/)"
  expect "$tmp/b.err" "cohortrun: job id 'job-$scenario' is in use with another COHORT_SECRET ($keys); $free"
  grep -qE "/(names|agents)/b$" <<<"$(ETCDCTL_API=3 etcdctl --endpoints "$endpoints" get --prefix --keys-only "$prefix/")" &&
    fail "the refused agent wrote to the job's keys"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  # A re-run after the job ended: with its secret, and with another.
  reuse_id c "$own"
  expect "$tmp/c.err" "cohortrun: job 'job-$scenario' already ended in etcd: give a new job a new --rdzv-id (or remove the old job's keys: etcdctl del --prefix $prefix/)"
  reuse_id d "$other"
  expect "$tmp/d.err" "cohortrun: job id 'job-$scenario' was used by a job that has ended with another COHORT_SECRET ($keys); $free"
  # An id squatted with bytes that no job sealed: refused at start too, saying so.
  etcd_kv put /cohort/job-squatted/job "$(b64 junk)"
  rc=0
  "$cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoints" --rdzv-id job-squatted \
    --node-name e --node-address 127.0.0.1 --nnodes 1 -- "$worker" "${trainer[@]}" \
    >"$tmp/squatted.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "an agent for a squatted id exited $rc, expected 2"
  expect "$tmp/squatted.log" "cohortrun: job id 'job-squatted' is taken in etcd: /cohort/job-squatted/job holds bytes that no Cohort job sealed (written without any job's secret); give this job a new --rdzv-id, or free the id once nothing uses it (etcdctl del --prefix /cohort/job-squatted/)"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
