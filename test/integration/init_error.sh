#!/usr/bin/env bash
# A COHORT_TIMELINE that rank 0 cannot write: every rank's init() fails with that cause (rank 0
# publishes it in place of the control address), not only rank 0's while the others are told
# that rank 0 closed a connection. Also in a world of one.
set -euo pipefail
cohortrun=$1 worker=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { cat "$tmp/out"; echo "FAIL: $*"; exit 1; }
path=$tmp/missing/timeline.json
cause="InvalidArgument: COHORT_TIMELINE='$path' cannot be written: No such file or directory"

COHORT_TIMELINE=$path "$cohortrun" -np 3 "$worker" >"$tmp/out" 2>&1 || fail "cohortrun failed"
for r in 0 1 2; do
  grep -qxF -- "[$r] rank $r: $cause" "$tmp/out" || fail "rank $r was not told: $cause"
done

COHORT_TIMELINE=$path "$worker" >"$tmp/out" 2>&1 || fail "the lone worker failed"
grep -qxF -- "rank -: $cause" "$tmp/out" || fail "a world of one was not told: $cause"
[[ ! -e $path ]] || fail "a timeline was written"
echo "init_error: every rank was told why rank 0 could not start"
