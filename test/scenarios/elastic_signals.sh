#!/usr/bin/env bash
# Signals and output files of an elastic cohortrun job, end to end with the real trainer
# (libcohort, elastic::run): SIGUSR1 and SIGUSR2 (Slurm's warning ahead of preemption) passed on
# to workers that took no handler of their own, to one that did, and to one that restored the
# default and dies of it; --event-log and --metrics-file on what is not a regular file; a short
# COHORT_TIMEOUT_SECONDS. docs/operations.md, "Signals" and "Output files".
#   elastic_signals.sh COHORTRUN SCENARIO_TRAINER SCENARIO
set -euo pipefail
cohortrun=$1 worker=$2 scenario=$3
source "$(dirname "$0")/../elastic_job/elastic_test_lib.sh"

trainer=(--samples 240 --batch 4 --commit-every 2 --until-file "$tmp/stop" --step-delay-ms 2)
trained_once() {  # the job ended well and rank 0 checked the history
  expect_exit 0
  expect "$tmp/out" "\[0\] trainer: exactly once: [0-9]* epochs of 240 samples"
}
epoch_at() {  # epoch_at EPOCH SIZE RESETS: rank 0 finished that epoch in that world
  echo "\[0\] trainer: epoch $1 done rank=0 size=$2 resets=$3"
}
last_epoch() {  # the last epoch rank 0 finished
  sed -n 's/^\[0\] trainer: epoch \([0-9]*\) done .*/\1/p' "$tmp/out" | tail -1
}
no_failure() {
  expect_no "$tmp/err" ".*blacklisting.*"
  expect_no "$tmp/err" ".*exited with status.*"
}
bounded() {  # bounded SECONDS COMMAND...: COMMAND's status; 124 or 137 where it had to be killed
  local rc=0
  timeout -k 2 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  echo $rc
}

case $scenario in
usr1_no_handler)  # SIGUSR1 and SIGUSR2 to cohortrun: workers without a handler train on
  set_hosts localhost:2 127.0.0.2:1
  start "${discovery[@]}" --min-np 3 --event-log "$tmp/events.jsonl" -- "${trainer[@]}"
  wait_for "$tmp/out" "$(epoch_at '[0-9]*' 3 0)"
  kill -USR1 "$job"
  kill -USR2 "$job"
  wait_for "$tmp/err" "\[cohortrun\] received SIGUSR2; passing it on to the workers"
  wait_for "$tmp/out" "$(epoch_at $(($(last_epoch) + 2)) 3 0)"
  touch "$tmp/stop"
  trained_once
  no_failure
  expect_no "$tmp/err" ".*killed by signal.*"
  expect_no "$tmp/err" "$(round 1 '.*')"
  ;;
usr1_own_handler)  # a worker's own SIGUSR1 handler, installed before init(), still gets it
  set_hosts localhost:2 127.0.0.2:1
  start "${discovery[@]}" --min-np 3 -- "${trainer[@]}" --usr1-handler 1
  wait_for "$tmp/out" "$(epoch_at '[0-9]*' 3 0)"
  kill -USR1 "$job"
  for id in 0 1 2; do wait_for "$tmp/out" "\[[0-2]\] trainer: got SIGUSR1 worker=$id"; done
  touch "$tmp/stop"
  trained_once
  no_failure
  ;;
usr1_default_dies)  # a worker that put SIGUSR1's default back dies of it: not a host failure
  set_hosts localhost:2 127.0.0.2:1
  start "${discovery[@]}" --min-np 3 --event-log "$tmp/events.jsonl" -- "${trainer[@]}" \
    --usr1-dies 2
  wait_for "$tmp/out" "$(epoch_at '[0-9]*' 3 0)"
  kill -USR1 "$job"
  wait_for "$tmp/err" "\[cohortrun\] worker 2 (rank 2 on 127.0.0.2 slot 0) was killed by signal 10 (SIGUSR1), a signal cohortrun passed on: not a failure; its slot starts another"
  wait_for "$tmp/err" "$(round 1 'size 3: .*\[2\] worker 3 127.0.0.2:0')"
  wait_for "$tmp/out" "$(epoch_at '[0-9]*' 3 1)"
  touch "$tmp/stop"
  trained_once
  no_failure
  python3 - "$tmp/events.jsonl" <<'PY' || fail "the event log's exit of worker 2 is wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exit2 = [l for l in lines if l["event"] == "worker_exit" and l["worker"] == 2]
assert [(e["signal"], e["verdict"]) for e in exit2] == [("SIGUSR1", "signalled")], exit2
assert not [l for l in lines if l["event"] == "blacklist"], "a host was blacklisted"
PY
  ;;
usr1_python)  # the same with the Python package: examples/torch/train_digits.py under cohortrun
  # The test sets COHORT_TEST_PYTHON (a python3 with torch) and PYTHONPATH (the built package).
  [[ -n ${COHORT_TEST_PYTHON:-} ]] || { echo "SKIP: no Python package built"; exit 77; }
  "$COHORT_TEST_PYTHON" -c "import torch" 2>/dev/null || { echo "SKIP: no torch"; exit 77; }
  set_hosts localhost:2
  worker=$COHORT_TEST_PYTHON  # the program start() runs
  start "${discovery[@]}" --min-np 2 -- "$(dirname "$0")/../../examples/torch/train_digits.py" \
    --epochs 6 --step-delay-ms 5
  wait_for "$tmp/out" "\[0\] train_digits: epoch 0 done: .*"
  kill -USR1 "$job"
  kill -USR2 "$job"
  wait_for "$tmp/err" "\[cohortrun\] received SIGUSR2; passing it on to the workers"
  expect_exit 0
  expect "$tmp/out" "\[0\] train_digits: summary: 6 epochs, world size 2, resets seen by this worker 0, .*every sample of every epoch trained exactly once: yes"
  expect_no "$tmp/err" ".*killed by signal.*"
  no_failure
  ;;
event_log_fifo)  # --event-log on a FIFO nobody reads: refused at once, never a hang
  mkfifo "$tmp/fifo"
  set_hosts localhost:1
  rc=$(bounded 10 "$cohortrun" "${discovery[@]}" --event-log "$tmp/fifo" "$worker" "${trainer[@]}")
  [[ $rc == 2 ]] || fail "cohortrun exited $rc, expected 2 at once"
  expect "$tmp/err" "cohortrun: --event-log: '$tmp/fifo' is a FIFO; Cohort writes only regular files"
  rc=$(bounded 10 "$cohortrun" -np 1 --event-log "$tmp/fifo" "$worker" "${trainer[@]}")
  [[ $rc == 2 ]] || fail "static: cohortrun exited $rc, expected 2 at once"
  expect "$tmp/err" "cohortrun: --event-log: '$tmp/fifo' is a FIFO; Cohort writes only regular files"
  ;;
metrics_links)  # --metrics-file and --event-log never written through a symbolic link
  echo precious >"$tmp/victim"
  ln -s "$tmp/victim" "$tmp/metrics.prom"
  ln -s "$tmp/victim" "$tmp/events.jsonl"
  set_hosts localhost:1
  rc=$(bounded 10 "$cohortrun" "${discovery[@]}" --metrics-file "$tmp/metrics.prom" "$worker" \
    "${trainer[@]}")
  [[ $rc == 2 ]] || fail "cohortrun exited $rc, expected 2"
  expect "$tmp/err" "cohortrun: --metrics-file: '$tmp/metrics.prom' is a symbolic link; Cohort writes only regular files"
  rc=$(bounded 10 "$cohortrun" "${discovery[@]}" --event-log "$tmp/events.jsonl" "$worker" \
    "${trainer[@]}")
  [[ $rc == 2 ]] || fail "cohortrun exited $rc, expected 2"
  expect "$tmp/err" "cohortrun: --event-log: '$tmp/events.jsonl' is a symbolic link; Cohort writes only regular files"
  [[ $(cat "$tmp/victim") == precious ]] || fail "the link's target was written"
  ;;
short_timeout)  # COHORT_TIMEOUT_SECONDS=5 alone: the peer timeout is lowered, the job runs
  set_hosts localhost:2
  COHORT_TIMEOUT_SECONDS=5 start "${discovery[@]}" --min-np 2 -- "${trainer[@]}"
  wait_for "$tmp/out" "$(epoch_at 1 2 0)"
  touch "$tmp/stop"
  trained_once
  grep -q "COHORT_TIMEOUT_SECONDS 5 s is not longer than the default COHORT_PEER_TIMEOUT_SECONDS 5 s: COHORT_PEER_TIMEOUT_SECONDS lowered to 2.5 s" "$tmp/err" ||
    fail "no warning naming both timeouts"
  # Both set, inconsistently: refused at once, naming both.
  rc=0
  COHORT_TIMEOUT_SECONDS=5 COHORT_PEER_TIMEOUT_SECONDS=5 "$cohortrun" "${discovery[@]}" \
    "$worker" "${trainer[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "both timeouts set inconsistently: exited $rc, expected 2"
  grep -q "COHORT_TIMEOUT_SECONDS 5 s is not longer than COHORT_PEER_TIMEOUT_SECONDS 5 s" "$tmp/err" ||
    fail "the refusal does not name both timeouts"
  ;;
*)
  fail "unknown scenario"
  ;;
esac
echo "PASS ($scenario)"
