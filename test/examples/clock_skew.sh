#!/usr/bin/env bash
# A worker whose clock is more than 60 s off cohortrun's (COHORT_FAULT_CLOCK_SKEW_SECONDS) is
# refused by cohortrun's rendezvous server, and says so itself: its error names the skew and what
# to do, it exits 1 at once (no retries until COHORT_TIMEOUT_SECONDS, no SIGABRT), in a static
# job and in an elastic one. Within the window it runs.
#   clock_skew.sh BIN_DIR
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { cat "$tmp/out"; echo "FAIL: $*"; exit 1; }

refused() {  # refused SKEW WORDS COHORTRUN_ARGS...: every worker is told why, and fails at once
  local skew=$1 words=$2
  shift 2
  local start=$SECONDS rc=0
  COHORT_FAULT_CLOCK_SKEW_SECONDS=$skew COHORT_TIMEOUT_SECONDS=30 \
    timeout 60 "$bin/cohortrun" "$@" "$bin/hello_allreduce" >"$tmp/out" 2>&1 || rc=$?
  [[ $rc -ne 0 && $rc -ne 124 ]] || fail "cohortrun $* exited $rc with a skew of $skew s"
  ((SECONDS - start < 20)) || fail "the refusal took $((SECONDS - start)) s"
  grep -Eq "^\[w?[0-9]\] hello_allreduce: .*refused this worker's request: its timestamp is $words the clock of cohortrun's host \(requests are accepted within ±60 s\): this host's clock differs from cohortrun's by that much; set them right \(NTP\)$" \
    "$tmp/out" || fail "no worker said why it was refused ($skew s)"
  ! grep -Eq "SIGABRT|terminate called" "$tmp/out" || fail "a worker aborted"
}

refused 120 "120 s ahead of" -np 2
refused -90 "90 s behind" -np 2
refused 120 "120 s ahead of" --min-np 2 -H localhost:2
COHORT_FAULT_CLOCK_SKEW_SECONDS=45 COHORT_TIMEOUT_SECONDS=30 timeout 60 \
  "$bin/cohortrun" -np 2 "$bin/hello_allreduce" >"$tmp/out" 2>&1 || fail "45 s of skew was refused"
grep -q "sum of ranks = 1" "$tmp/out" || fail "no sum within the window"
echo "PASS (clock_skew)"
