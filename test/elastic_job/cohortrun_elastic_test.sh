#!/usr/bin/env bash
# cohortrun's elastic mode end to end: the real cohortrun, real worker processes speaking the
# elastic protocol (elastic_fake_worker), real discovery scripts that print a file the test
# rewrites. Events are ordered by waiting (bounded) for the launcher's log lines, never by sleeping.
#   cohortrun_elastic_test.sh COHORTRUN FAKE_WORKER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/elastic_test_lib.sh"

case $scenario in
initial)  # min/max-np: 4 slots on two hosts, at most 3 workers; each listens on its host
  set_hosts localhost:2 127.0.0.2:2
  start "${discovery[@]}" --min-np 2 --max-np 3 -- --at '0:*' finish
  expect_exit 0
  expect "$tmp/err" "$(round 0 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 2 127.0.0.2:0')"
  for r in 0 1 2; do expect "$tmp/out" "\[$r\] worker $r round 0 rank $r size 3"; done
  expect "$tmp/out" "\[.*\] worker 2 listens on 127.0.0.2"
  expect "$tmp/out" "\[.*\] worker 0 listens on 127.0.0.1"
  expect_no "$tmp/out" ".*worker 3.*"
  ;;
add_remove)  # a host added then removed
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- --at '2:*' finish
  wait_for "$tmp/err" "$(round 0 'size 2: .*')"
  set_hosts localhost:2 127.0.0.3:1
  wait_for "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 2 127.0.0.3:0')"
  wait_for "$tmp/out" "\[2\] worker 2 round 1 rank 2 size 3"
  set_hosts localhost:2
  expect_exit 0
  expect "$tmp/err" "\[cohortrun\] usable slots changed: removed 127.0.0.3:0"
  expect "$tmp/err" "$(round 2 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  expect "$tmp/out" "\[.*\] worker 2 told to exit"
  expect "$tmp/err" "\[cohortrun\] worker 2 (rank 2 on 127.0.0.3 slot 0) is not in the job any more; told it to exit"
  expect "$tmp/out" "\[1\] worker 1 round 2 rank 1 size 2"
  ;;
event_log)  # --event-log and --metrics-file: a failure, a discovery outage and a new host
  command -v promtool >/dev/null || fail "no promtool (apt-get install prometheus)"
  set_hosts localhost:3
  start "${discovery[@]}" --min-np 2 --event-log "$tmp/events.jsonl" \
    --metrics-file "$tmp/metrics.prom" -- --at 0:1 exit=3 --at '2:*' finish
  wait_for "$tmp/err" "$(round 1 'size 2: .*')"
  touch "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] host discovery script .*"
  rm "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] the host discovery script works again"
  set_hosts localhost:3 127.0.0.2:1
  expect_exit 0
  here=$(dirname "$0")
  python3 "$here/../launcher/check_event_log.py" "$tmp/events.jsonl" "$here/../../docs/operations.md" \
    >"$tmp/events" || fail "the event log does not match docs/operations.md"
  # The events in order, and the fields that tell the story.
  [[ $(grep -v "^worker_start$\|^worker_exit$\|^worker_told_exit$" "$tmp/events" | tr '\n' ' ') == \
    "job_start slots_changed round blacklist slots_changed round discovery_failure discovery_recovered slots_changed round job_end " ]] ||
    fail "events: $(tr '\n' ' ' <"$tmp/events")"
  python3 - "$tmp/events.jsonl" <<'PY' || fail "the event log's fields are wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
by = lambda name: [l for l in lines if l["event"] == name]
assert len({l["job"] for l in lines}) == 1
rounds = by("round")
assert [(r["round"], r["size"], r["cause"]) for r in rounds] == \
    [(0, 3, "start"), (1, 2, "failure"), (2, 3, "hosts_changed")], rounds
assert [m["rank"] for m in rounds[2]["members"]] == [0, 1, 2]
failed = [e for e in by("worker_exit") if e["verdict"] == "failed"]
assert [(e["rank"], e["exit_code"]) for e in failed] == [(1, 3)], failed
assert by("blacklist")[0] == {**by("blacklist")[0], "host": "localhost", "slot": 1,
                               "failures": 1, "cooldown_seconds": None}
assert by("slots_changed")[0]["added"] == ["localhost:0", "localhost:1", "localhost:2"]
assert by("slots_changed")[2]["added"] == ["127.0.0.2:0"]
assert "discovery backend unreachable" in by("discovery_failure")[0]["error"]
assert len(by("worker_start")) == 4
assert by("job_end")[0]["exit_code"] == 0
assert rounds[1]["recovery_seconds"] > 0 and "recovery_seconds" not in rounds[0]
PY
  promtool check metrics <"$tmp/metrics.prom" || fail "promtool refuses the metrics file"
  job=$(grep -o '"job":"[^"]*"' "$tmp/events.jsonl" | sed -n 1p | cut -d'"' -f4)
  for sample in "cohort_rounds_total 3" 'cohort_resets_total{cause="failure"} 1' \
    'cohort_resets_total{cause="hosts_changed"} 1' "cohort_workers_started_total 4" \
    "cohort_workers_failed_total 1" "cohort_discovery_failures_total 1" \
    "cohort_usable_slots 3" "cohort_world_size 3" "cohort_blacklistings_total 1"; do
    name=${sample%% *} value=${sample##* }
    labels="job=\"$job\""
    [[ $name == *"{"* ]] && labels="$labels,${name#*\{}" && name=${name%%\{*} && labels=${labels%\}}
    grep -qxF "$name{$labels} $value" "$tmp/metrics.prom" ||
      { cat "$tmp/metrics.prom"; fail "no sample '$name{$labels} $value'"; }
  done
  ;;
sigkill)  # a worker killed on a one-host job: its slot is retired, the job goes on with 3
  set_hosts localhost:4
  start "${discovery[@]}" --min-np 2 --output-filename "$tmp/logs" -- --at 0:3 die --at '1:*' finish
  expect_exit 0
  # --output-filename: a file per rank and round, the round's lines only.
  expect "$tmp/logs/round.1/rank.2/stdout" "worker 2 round 1 rank 2 size 3"
  [[ -e $tmp/logs/round.1/rank.3/stdout ]] && fail "a rank 3 in round 1"
  expect "$tmp/logs/round.0/rank.0/stdout" "worker 0 round 0 rank 0 size 4"
  grep -q "round 1" "$tmp/logs/round.0/rank.0/stdout" && fail "round 1's lines in round 0's file"
  expect "$tmp/err" "\[cohortrun\] worker 3 (rank 3 on localhost slot 3) (pid [0-9]*) was killed by signal 9 (SIGKILL)"
  expect "$tmp/err" ".*retiring slot localhost:3 .*"
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 2 localhost:2')"
  for r in 0 1 2; do expect "$tmp/out" "\[$r\] worker $r round 1 rank $r size 3"; done
  ;;
fixed_hosts)  # fault tolerance without scaling: -H with --min-np
  start -H localhost:3 --min-np 2 -- --at 0:1 exit=3 --at '1:*' finish
  expect_exit 0
  expect "$tmp/err" "\[cohortrun\] worker 1 (rank 1 on localhost slot 1) (pid [0-9]*) exited with status 3"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
  expect "$tmp/out" "\[1\] worker 2 round 1 rank 1 size 2"
  ;;
all_fail)  # every worker fails: its host is blacklisted, and that was the only host
  start -H localhost:2 --min-np 1 -- --at '0:*' exit=1
  expect_exit 1
  expect "$tmp/err" "cohortrun: all hosts are blacklisted: localhost (1 failure, for good: no --blacklist-cooldown-range); stopping the workers"
  ;;
all_blacklisted)  # two hosts, each loses its only worker
  set_hosts localhost 127.0.0.2
  start "${discovery[@]}" -- --at '0:*' exit=1
  expect_exit 1
  expect "$tmp/err" "cohortrun: all hosts are blacklisted: localhost (1 failure, for good: no --blacklist-cooldown-range), 127.0.0.2 (1 failure, for good: no --blacklist-cooldown-range); stopping the workers"
  ;;
elastic_timeout)  # fewer than --min-np slots for longer than --elastic-timeout
  set_hosts localhost:1
  start "${discovery[@]}" --min-np 2 --elastic-timeout 1 --
  expect_exit 1
  expect "$tmp/err" "cohortrun: only 1 slot available, fewer than --min-np 2, for more than --elastic-timeout 1 s; stopping the workers"
  expect_no "$tmp/err" "\[cohortrun\] round .*"
  ;;
start_timeout)  # a worker that never checks in is killed at --start-timeout (the policy's start_overdue)
  "$cohortrun" --term-grace-seconds 2 -H localhost:1 --min-np 1 --start-timeout 1 sleep 60 \
    >"$tmp/out" 2>"$tmp/err" &
  job=$!
  expect_exit 1
  expect "$tmp/err" "\[cohortrun\] worker 0 .* did not check in within --start-timeout 1 s; taking it for failed and killing it"
  ;;
reset_limit)  # two failures, one reset allowed
  start -H localhost:3 --min-np 1 --reset-limit 1 -- --at 0:2 exit=1 --at 1:1 exit=1
  expect_exit 1
  expect "$tmp/err" "$(round 1 'size 2: .*')"
  expect "$tmp/err" "cohortrun: the job reset 2 times, more than --reset-limit 1; stopping the workers"
  ;;
cooldown)  # a blacklisted host returns after its cooldown and gets a worker again
  set_hosts localhost 127.0.0.2
  start "${discovery[@]}" --min-np 1 --blacklist-cooldown-range 0.5 1 -- --at 0:1 exit=1 \
    --at '2:*' finish
  expect_exit 0
  expect "$tmp/err" ".*blacklisting host 127.0.0.2 (every worker on it has failed) for 0.5 s after 1 failure"
  expect "$tmp/err" "$(round 1 'size 1: \[0\] worker 0 localhost:0')"
  expect "$tmp/err" "\[cohortrun\] usable slots changed: added 127.0.0.2:0"
  expect "$tmp/err" "$(round 2 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 127.0.0.2:0')"
  ;;
bad_discovery)  # garbage, then a failing script: logged, the last good set kept, the job goes on
  set_hosts localhost:2
  start "${discovery[@]}" --min-np 2 -- --at '1:*' finish
  wait_for "$tmp/err" "$(round 0 'size 2: .*')"
  set_hosts "this is not a host list!"
  wait_for "$tmp/err" "\[cohortrun\] host discovery script '.*' printed an unusable host list: line 1: .*keeping the last good set of 1 host(s)"
  touch "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] host discovery script '.*' exited with status 3; keeping the last good set of 1 host(s)"
  wait_for "$tmp/err" "  stderr: discovery backend unreachable"
  set_hosts localhost:2 127.0.0.2
  rm "$tmp/broken"
  wait_for "$tmp/err" "\[cohortrun\] the host discovery script works again"
  expect_exit 0
  expect_no "$tmp/err" ".*removed.*"
  [[ $(grep -c "exited with status 3" "$tmp/err") -eq 1 ]] || fail "a failure streak was reported more than once"
  expect "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 2 127.0.0.2:0')"
  ;;
finish_early)  # a worker exiting 0 while the others still train does not end the job
  set_hosts localhost:3
  start "${discovery[@]}" --min-np 2 -- --at 0:2 finish --at '1:*' finish
  expect_exit 0
  expect "$tmp/err" "\[cohortrun\] worker 2 (rank 2 on localhost slot 2) finished (exit status 0)"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1')"
  expect "$tmp/out" "\[1\] worker 1 round 1 rank 1 size 2"
  expect_no "$tmp/out" ".*worker 3.*"
  ;;
checkin_timeout)  # after a failed collective, a silent worker is killed at the check-in grace
  set_hosts localhost:3
  COHORT_PEER_TIMEOUT_SECONDS=0.3 start "${discovery[@]}" --checkin-timeout 0.5 -- --at 0:0 fail \
    --at 0:1 hang --at '1:*' finish
  expect_exit 0
  expect "$tmp/err" "\[cohortrun\] worker 1 (rank 1 on localhost slot 1) did not check in within --checkin-timeout 0.5 s after its round broke up; taking it for failed and killing it"
  expect "$tmp/err" "$(round 1 'size 2: \[0\] worker 0 localhost:0, \[1\] worker 2 localhost:2')"
  ;;
signal)  # SIGTERM to cohortrun stops the workers
  set_hosts localhost:2
  start "${discovery[@]}" --
  wait_for "$tmp/err" "$(round 0 'size 2: .*')"
  kill -TERM "$job"
  expect_exit 143
  expect "$tmp/err" "cohortrun: received SIGTERM; stopping the workers"
  ;;
bad_flags)  # contradictory combinations are refused before anything starts
  check_error() {  # check_error EXPECTED ARGS...
    local expected=$1 rc=0; shift
    "$cohortrun" "$@" "$worker" >"$tmp/out" 2>&1 || rc=$?
    [[ $rc -ne 0 ]] || fail "cohortrun $* succeeded"
    grep -qxF -- "$expected" "$tmp/out" || fail "no line '$expected' for: $*"
  }
  check_error "cohortrun: --host-discovery-script cannot be combined with -H or --hostfile: the script says which hosts the job has" \
    --host-discovery-script "$tmp/discover.sh" -H localhost:2
  check_error "cohortrun: -np cannot be combined with --host-discovery-script or --min-np: an elastic job runs between --min-np and --max-np workers" \
    -np 2 --min-np 1 -H localhost:2
  check_error "cohortrun: --min-np needs --host-discovery-script, or hosts with -H or --hostfile (fault tolerance on fixed hosts)" \
    --min-np 2
  check_error "cohortrun: --discovery-interval needs --host-discovery-script" \
    -H localhost:2 --min-np 1 --discovery-interval 2
  check_error "cohortrun: --reset-limit needs an elastic job: --host-discovery-script, or --min-np with -H or --hostfile" \
    -np 2 --reset-limit 3
  check_error "cohortrun: --max-np 1 is less than --min-np 2" \
    -H localhost:2 --min-np 2 --max-np 1
  check_error "cohortrun: --min-np 3 needs 3 slots but the hosts offer only 2" -H localhost:2 --min-np 3
  check_error "cohortrun: --blacklist-cooldown-range needs 0 < LO <= HI, got 5 s and 1 s" \
    -H localhost:2 --min-np 1 --blacklist-cooldown-range 5 1
  check_error "cohortrun: host discovery script '$tmp/missing.sh' cannot be run: No such file or directory" \
    --host-discovery-script "$tmp/missing.sh"
  check_error "cohortrun: host 'otherhost' cannot be reached: cannot resolve 'otherhost': Name or service not known" \
    -H otherhost:2 --min-np 1
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "cohortrun elastic ($scenario): all checks passed"
