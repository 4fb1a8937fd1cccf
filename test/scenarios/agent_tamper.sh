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
# sealed SECRET KEY VALUE: VALUE sealed for KEY with SECRET (hex), in base64, as a job of that
# secret writes it (rendezvous/signed_value.h): "CV1", HMAC-SHA256(secret, u64 length of the key,
# the key, the value), the value.
sealed() {
  python3 - "$@" <<'PY'
import base64, hashlib, hmac, struct, sys
secret, key, value = bytes.fromhex(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
mac = hmac.new(secret, struct.pack("<Q", len(key)) + key + value, hashlib.sha256).digest()
print(base64.b64encode(b"CV1" + mac + value).decode())
PY
}
own=$COHORT_SECRET
other=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# reuse_id NODE SECRET MS: an agent with the id job-$scenario and SECRET, refused (exit 2) within
# MS ms; waiting for a second node, it would stop after --elastic-timeout 5 s instead.
reuse_id() {
  local began
  began=$(date +%s%N)
  COHORT_SECRET=$2
  agent "$1" --nnodes 2 --elastic-timeout 5 -- "${trainer[@]}"
  COHORT_SECRET=$own
  expect_exit "$1" 2
  local took=$((($(date +%s%N) - began) / 1000000))
  echo "agent $1 refused ${took} ms after its start"
  ((took < $3)) || fail "agent $1 was refused only after ${took} ms"
}
keys="its keys under $prefix/ are sealed with another secret: a second job given the same id, or a re-run with a new secret"
free="give this job a new --rdzv-id, or free the id once nothing uses it (etcdctl del --prefix $prefix/)"
# wrote_nothing NODE: the refused agent of NODE wrote none of its keys to the job's.
wrote_nothing() {
  grep -qE "/(names|agents)/$1$" <<<"$(ETCDCTL_API=3 etcdctl --endpoints "$endpoints" get --prefix --keys-only "$prefix/")" &&
    fail "the refused agent $1 wrote to the job's keys"
  return 0
}
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
  reuse_id b "$other" 10000
  expect "$tmp/b.err" "cohortrun: job id 'job-$scenario' is in use with another COHORT_SECRET ($keys); $free"
  wrote_nothing b
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  # A re-run after the job ended: with its secret, and with another.
  reuse_id c "$own" 10000
  expect "$tmp/c.err" "cohortrun: job 'job-$scenario' already ended in etcd: give a new job a new --rdzv-id (or remove the old job's keys: etcdctl del --prefix $prefix/)"
  reuse_id d "$other" 10000
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
marker_deleted)  # the marker deleted, overwritten mid-job: restored; another secret refused < 2 s
  start_etcd 1
  agent a --nnodes 1 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 1 0)"
  marker=$(etcd_kv get "$prefix/job")
  [[ $marker == "$(sealed "$own" "$prefix/job" running)" ]] || fail "the marker is not 'running'"
  etcd_kv del "$prefix/job"
  # At once: refused by the marker that a set again, or by a's name and round if it came first.
  reuse_id b "$other" 2000
  expect "$tmp/b.err" "cohortrun: job id 'job-$scenario' is in use with another COHORT_SECRET (.*); $free"
  wrote_nothing b
  wait_value "$prefix/job" "$marker"
  # Bytes no job sealed, then another secret's own marker (a second job's, as it would write it).
  for bad in "$(b64 junk)" "$(sealed "$other" "$prefix/job" running)"; do
    etcd_kv put "$prefix/job" "$bad"
    wait_value "$prefix/job" "$marker"
  done
  reuse_id c "$other" 2000
  expect "$tmp/c.err" "cohortrun: job id 'job-$scenario' is in use with another COHORT_SECRET ($keys); $free"
  expect "$tmp/a.err" ".*agent: the job's marker $prefix/job is missing from etcd or was refused .*; setting it again, so that a job of another secret is refused the id"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  expect "$tmp/a.out" "\[0\] trainer: finished epochs=[0-9]* resets=0"
  ;;
marker_gap)  # a second job comes while the marker is gone and the job cannot set it: the job wins
  lease_flags=(--rdzv-lease-ttl 10 --checkin-timeout 5)  # a's lease outlasts its stop below
  start_etcd 1
  agent a --nnodes 1:2 --rdzv-last-call 0 -- "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 1 0)"
  marker=$(etcd_kv get "$prefix/job")
  kill -STOP "${agents[a]}"  # its worker trains on; the agent cannot set the marker again
  etcd_kv del "$prefix/job"
  # The second job finds a's live name and its round, sealed with another secret: refused, before
  # it writes anything, the marker included.
  reuse_id b "$other" 2000
  expect "$tmp/b.err" "cohortrun: job id 'job-$scenario' is in use with another COHORT_SECRET (its marker $prefix/job is missing, but [0-9]* of its agents' names and rounds under $prefix/ are sealed with another secret: a job of that secret runs, or ran, there); $free"
  wrote_nothing b
  [[ -z $(etcd_kv get "$prefix/job") ]] || fail "the refused agent wrote the job's marker"
  # A node of the job itself, with bytes no job sealed at the marker: it finds its job's name and
  # round, sets the marker again, and joins.
  etcd_kv put "$prefix/job" "$(b64 junk)"
  agent c --nnodes 1:2 -- "${trainer[@]}" "${until_stop[@]}"
  wait_value "$prefix/job" "$marker"
  expect "$tmp/c.err" ".*agent: the marker $prefix/job is missing or not sealed by this job, whose agents or rounds are there; setting it again"
  kill -CONT "${agents[a]}"
  wait_for "$tmp/a.out" "$(epoch_at 2 1)"
  touch "$tmp/stop"
  expect_exit a 0
  expect_exit c 0
  trained_once a
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
