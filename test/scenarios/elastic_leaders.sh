#!/usr/bin/env bash
# Host leaders (--control-leaders, or by default) in cohortrun's elastic mode, end to end with the
# real trainer: three hosts on loopback, 127.0.0.1:1, 127.0.0.2:2 and 127.0.0.3:2. A worker that
# replaces a lost one, or joins a host that grows, takes its rank among its host's survivors
# (rule 4, docs/elastic-policy.md), so that every rank's control channel goes through a leader on
# its own host (the routes are checked against the launcher's rounds: check_control_routes.py).
# Each scenario ends with exit 0 and rank 0's "exactly once" check.
#   elastic_leaders.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"
source "$(dirname "$0")/worker_pid.sh"
export COHORT_LOG_LEVEL=debug  # the workers' control lines

trainer=(--samples 240 --batch 4 --commit-every 2 --until-file "$tmp/stop" --step-delay-ms 2)
three=(127.0.0.1:1 127.0.0.2:2 127.0.0.3:2)
leaders=(--control-leaders --min-np 3 --blacklist-cooldown-range 0.5 1)
fail_at() {  # fail_at STEP RANK HOW: the trainer arguments that inject one failure
  echo --fail-step "$1" --fail-rank "$2" --fail-how "$3" --fail-marker "$tmp/failed"
}
epoch_at() {  # epoch_at SIZE RESETS: rank 0 finished an epoch in that world
  echo "\[0\] trainer: epoch [0-9]* done rank=0 size=$1 resets=$2"
}
members() {  # members W0 W1 ...: the round line's members, "W HOST:SLOT" each, in rank order
  local list="" rank=0 m
  for m in "$@"; do
    list+="${list:+, }\\[$rank\\] worker ${m% *} ${m#* }"
    rank=$((rank + 1))
  done
  echo "size $#: $list"
}
finish() {  # the new layout trains an epoch; then the job ends well with routes checked
  wait_for "$tmp/out" "$(epoch_at "$1" "$2")"
  touch "$tmp/stop"
  expect_exit 0
  expect "$tmp/out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
  expect_no "$tmp/out" ".*needs the ranks of each host to be consecutive.*"
  python3 "$(dirname "$0")/check_control_routes.py" "$tmp/err" || fail "a control route is wrong"
}
# After rank 1 (127.0.0.2's leader, worker 1) failed: round 1 without it, then its replacement,
# worker 5, joins 127.0.0.2's survivor as rank 2.
replaced_leader() {
  wait_for "$tmp/err" "$(round 1 "$(members "0 127.0.0.1:0" "2 127.0.0.2:1" "3 127.0.0.3:0" \
    "4 127.0.0.3:1")")"
  wait_for "$tmp/err" "$(round 2 "$(members "0 127.0.0.1:0" "2 127.0.0.2:1" "5 127.0.0.2:0" \
    "3 127.0.0.3:0" "4 127.0.0.3:1")")"
  finish 5 2
}

case $scenario in
leaders_kill_leader)  # SIGKILL of 127.0.0.2's leader; its slot returns after the cooldown
  set_hosts "${three[@]}"
  start "${discovery[@]}" "${leaders[@]}" -- "${trainer[@]}" $(fail_at 5 1 kill)
  replaced_leader
  ;;
leaders_kill_member)  # SIGKILL of rank 2, the other rank of 127.0.0.2; leaders by default
  set_hosts "${three[@]}"
  start "${discovery[@]}" "${leaders[@]:1}" -- "${trainer[@]}" $(fail_at 5 2 kill)
  wait_for "$tmp/err" "$(round 1 "$(members "0 127.0.0.1:0" "1 127.0.0.2:0" "3 127.0.0.3:0" \
    "4 127.0.0.3:1")")"
  wait_for "$tmp/err" "$(round 2 "$(members "0 127.0.0.1:0" "1 127.0.0.2:0" "5 127.0.0.2:1" \
    "3 127.0.0.3:0" "4 127.0.0.3:1")")"
  finish 5 2
  ;;
leaders_stop_leader)  # SIGSTOP of 127.0.0.2's leader: the peers' heartbeats miss it, the
  # launcher kills it once it does not check in, and its slot returns after the cooldown
  set_hosts "${three[@]}"
  COHORT_PEER_TIMEOUT_SECONDS=1 start "${discovery[@]}" "${leaders[@]}" --checkin-timeout 3 -- \
    "${trainer[@]}" $(fail_at 5 1 stop)
  replaced_leader
  expect "$tmp/err" ".*worker 1 (rank 1 on 127.0.0.2 slot 0) did not check in within --checkin-timeout.*"
  ;;
leaders_scale_up)  # 127.0.0.2 grows to 3 slots: its new worker takes rank 3, before 127.0.0.3's
  set_hosts "${three[@]}"
  start "${discovery[@]}" "${leaders[@]}" -- "${trainer[@]}"
  wait_for "$tmp/out" "$(epoch_at 5 0)"
  set_hosts 127.0.0.1:1 127.0.0.2:3 127.0.0.3:2
  wait_for "$tmp/err" "$(round 1 "$(members "0 127.0.0.1:0" "1 127.0.0.2:0" "2 127.0.0.2:1" \
    "5 127.0.0.2:2" "3 127.0.0.3:0" "4 127.0.0.3:1")")"
  finish 6 1
  ;;
leaders_scale_down)  # 127.0.0.2 shrinks to 1 slot, then grows back to 2
  set_hosts "${three[@]}"
  start "${discovery[@]}" "${leaders[@]}" -- "${trainer[@]}"
  wait_for "$tmp/out" "$(epoch_at 5 0)"
  set_hosts 127.0.0.1:1 127.0.0.2:1 127.0.0.3:2
  wait_for "$tmp/err" "$(round 1 "$(members "0 127.0.0.1:0" "1 127.0.0.2:0" "3 127.0.0.3:0" \
    "4 127.0.0.3:1")")"
  wait_for "$tmp/out" "$(epoch_at 4 1)"
  set_hosts "${three[@]}"
  wait_for "$tmp/err" "$(round 2 "$(members "0 127.0.0.1:0" "1 127.0.0.2:0" "5 127.0.0.2:1" \
    "3 127.0.0.3:0" "4 127.0.0.3:1")")"
  finish 5 2
  ;;
leaders_fixed_hosts)  # -H with --min-np: fault tolerance on fixed hosts, 127.0.0.2's leader killed
  start -H 127.0.0.1:1,127.0.0.2:2,127.0.0.3:2 "${leaders[@]}" -- "${trainer[@]}" \
    $(fail_at 5 1 kill)
  replaced_leader
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
