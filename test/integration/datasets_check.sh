#!/usr/bin/env bash
# Runs datasets_check on 3 ranks and checks that the stall inspector named, for the metrics of
# datasets only some ranks have, the rank that is missing and the tensors it has not submitted.
set -euo pipefail
cohortrun=$1 worker=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! COHORT_STALL_CHECK_TIME_SECONDS=1 COHORT_STALL_SHUTDOWN_TIME_SECONDS=3 \
     "$cohortrun" -np 3 "$worker" >"$out" 2>&1; then
  cat "$out"; echo "FAIL: datasets_check failed"; exit 1
fi
expect() { grep -qF -- "$1" "$out" || { cat "$out"; echo "FAIL: missing: $1"; exit 1; }; }
expect "stall inspector: 4 collective(s) submitted by some ranks have waited more than 1 s"
expect "rank 0 has not submitted ['world/right/accuracy', 'world/right/loss']"
expect "rank 2 has not submitted ['world/left/accuracy', 'world/left/loss']"
expect "StallError: 'world/left/loss' stalled: submitted by ranks [0, 1] but not by ranks [2]"
expect "[0] rank 0: "
expect "[2] rank 2: "
echo "datasets_check: common names completed in any order, partial ones were reported, process sets completed them"
