#!/usr/bin/env bash
# The workers' reports in agent mode (docs/operations.md, "Event log" and "Metrics"), end to end
# with a real etcd and real scenario_trainer workers: each agent writes the rounds' cause and
# recovery time, its own workers' "reset" events and rank 0's progress, as cohortrun's server mode
# does; a report written to etcd without the job secret is refused, not recorded; a worker that
# never checks in is killed at --start-timeout (the policy's start_overdue, as in server mode).
#   agent_reports.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
source "$(dirname "$0")/agent_lib.sh"

# check_reports NODE CAUSE WORKER: NODE's event log has round 1 caused by CAUSE and WORKER's
# reset into it; its metrics file has the series server mode writes, progress included.
check_reports() {
  local here
  here=$(dirname "$0")
  python3 "$here/../launcher/check_event_log.py" "$tmp/$1.events" "$here/../../docs/operations.md" \
    job_start round reset job_end >/dev/null ||
    fail "node $1's event log does not match docs/operations.md"
  python3 - "$tmp/$1.events" "$tmp/$1.prom" "$2" "$3" <<'PY' || fail "node $1's reports are wrong"
import json, sys
events, prom, cause, worker = sys.argv[1:]
lines = [json.loads(l) for l in open(events)]
rounds = {l["round"]: l for l in lines if l["event"] == "round"}
assert rounds[0]["cause"] == "start", rounds[0]
assert rounds[1]["cause"] == cause, rounds[1]
assert rounds[1]["recovery_seconds"] >= 0, rounds[1]
resets = [(l["worker"], l["round"], l["old_size"], l["new_size"]) for l in lines
          if l["event"] == "reset"]
assert resets and resets[0][:2] == (worker, 1), resets
r = [l for l in lines if l["event"] == "reset"][0]
for phase in ("teardown_seconds", "assignment_seconds", "connect_seconds"):
    assert r[phase] >= 0, r
samples = dict(l.rsplit(" ", 1) for l in open(prom) if not l.startswith("#"))
names = {k.split("{")[0] for k in samples}
want = {"cohort_job_info", "cohort_world_size", "cohort_rounds_total", "cohort_resets_total",
        "cohort_recovery_seconds_bucket", "cohort_recovery_seconds_sum",
        "cohort_recovery_seconds_count", "cohort_usable_slots", "cohort_blacklisted_hosts",
        "cohort_blacklistings_total", "cohort_workers_started_total",
        "cohort_workers_failed_total", "cohort_drains_total", "cohort_discovery_failures_total",
        "cohort_commits_total", "cohort_samples_committed_total"}
assert names == want, names ^ want
value = lambda name: [float(v) for k, v in samples.items() if k.startswith(name)]
assert [v for k, v in samples.items()
        if k.startswith("cohort_resets_total") and f'cause="{cause}"' in k] == ["1\n"], samples
assert value("cohort_recovery_seconds_count") == [1], samples
assert value("cohort_commits_total")[0] > 0 and value("cohort_samples_committed_total")[0] > 0
assert value("cohort_commits_total")[0] < 999999, "a forged progress report was recorded"
PY
}

# reporting_agents "NNODES [FLAGS]" NODE...: one etcd member, and an agent per NODE that writes its
# event log and metrics file; returns once a round of two has trained (epoch 0).
reporting_agents() {
  local nnodes node
  read -ra nnodes <<<"$1"
  shift
  start_etcd 1
  for node in "$@"; do
    agent "$node" --nnodes "${nnodes[@]}" --event-log "$tmp/$node.events" \
      --metrics-file "$tmp/$node.prom" -- "${trainer[@]}" "${until_stop[@]}"
  done
  wait_for "$tmp/a.out" "$(epoch_at 2 0)"
}

case $scenario in
reports_drain)  # b's worker drains: a records round 1 as "drain", a.0.0's reset and the progress
  reporting_agents 1:2 a b
  # Without the job secret: refused by every agent, never counted.
  ETCDCTL_API=3 etcdctl --endpoints "$endpoints" put "/cohort/job-$scenario/elastic/progress" \
    "commits=999999 samples=999999" >/dev/null
  wait_for "$tmp/a.err" ".*rendezvous: refused .*elastic/progress.*"
  kill -TERM "$(worker_pid b.0.0)"
  expect_exit b 0
  wait_for "$tmp/a.out" "$(epoch_at 1 1)"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  check_reports a drain a.0.0
  ;;
reports_failure)  # b's worker is killed: a records round 1 as "failure"
  reporting_agents 1:2 a b
  kill -KILL "$(worker_pid b.0.0)"
  expect_exit b 1
  wait_for "$tmp/a.out" "$(epoch_at 1 1)"
  touch "$tmp/stop"
  expect_exit a 0
  trained_once a
  check_reports a failure a.0.0
  ;;
reports_add)  # c joins: every agent records round 1 as "hosts_changed"
  reporting_agents "2:3 --rdzv-last-call 0" a b
  agent c --nnodes 2:3 --event-log "$tmp/c.events" --metrics-file "$tmp/c.prom" -- \
    "${trainer[@]}" "${until_stop[@]}"
  wait_for "$tmp/a.out" "$(epoch_at 3 1)"
  touch "$tmp/stop"
  for node in a b c; do expect_exit $node 0; done
  trained_once a
  check_reports a hosts_changed a.0.0
  check_reports b hosts_changed b.0.0
  ;;
start_timeout)  # a worker that never checks in: killed at --start-timeout, its node leaves
  start_etcd 1
  "$cohortrun" --rdzv-backend etcd --rdzv-endpoints "$endpoints" --rdzv-id "job-$scenario" \
    --node-name a --node-address 127.0.0.1 "${lease_flags[@]}" --term-grace-seconds 2 \
    --nnodes 1 --start-timeout 1 --event-log "$tmp/a.events" sleep 60 >"$tmp/a.out" 2>"$tmp/a.err" &
  agents[a]=$!
  expect_exit a 1
  expect "$tmp/a.err" "\[cohortrun\] worker a.0.0 did not check in within --start-timeout 1 s; taking it for failed and killing it"
  grep -q '"event":"worker_timeout",.*"timeout":"start"' "$tmp/a.events" ||
    fail "no start timeout in a's event log"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
