#!/usr/bin/env bash
# One rank runs one more step than the other: the stall inspector must name the missing rank and
# tensor, and the stall shutdown time must turn the hang into an error on every rank.
#   stall_check.sh COHORTRUN STALL_CHECK [COHORTRUN_ARGS...] (e.g. two hosts, for host leaders)
set -euo pipefail
cohortrun=$1 worker=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
if COHORT_STALL_CHECK_TIME_SECONDS=1 COHORT_STALL_SHUTDOWN_TIME_SECONDS=3 \
   "$cohortrun" -np 2 "$@" "$worker" >"$out" 2>&1; then
  cat "$out"; echo "FAIL: the job succeeded although rank 0 ran an extra step"; exit 1
fi
elapsed=$(( $(date +%s) - start ))
expect() { grep -qF -- "$1" "$out" || { cat "$out"; echo "FAIL: missing: $1"; exit 1; }; }
expect "stall inspector: 2 collective(s) submitted by some ranks have waited more than 1 s for the others."
expect "rank 1 has not submitted ['grad']"
expect "rank 0 has not submitted ['end of training']"
expect "[0] rank 0 StallError: 'grad' stalled: submitted by ranks [0] but not by ranks [1] for more than 3 s (COHORT_STALL_SHUTDOWN_TIME_SECONDS)"
expect "[1] rank 1 StallError: 'end of training' stalled: submitted by ranks [1] but not by ranks [0]"
(( elapsed < 30 )) || { cat "$out"; echo "FAIL: took ${elapsed}s"; exit 1; }
echo "stall_check: inspector named the missing ranks and the stall failed both ranks in ${elapsed}s"
