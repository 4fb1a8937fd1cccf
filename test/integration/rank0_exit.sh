#!/usr/bin/env bash
# Rank 0 of an elastic job exits 1 while the others wait in an allreduce it never submits: the
# survivors reset and finish without it, and no message names a survivor as the rank that failed
# (rank 0 used to log "rank 2 failed: 'count_inc' cannot complete: rank 0 has shut down ...";
# here the collective is elastic::run's first state sync).
set -euo pipefail
cohortrun=$1 worker=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { cat "$out"; echo "FAIL: $*"; exit 1; }
COHORT_LOG_LEVEL=info "$cohortrun" -H localhost:3 --min-np 2 "$worker" >"$out" 2>&1 \
  || fail "the survivors did not finish"
grep -qF "rank 0 exits with 1" "$out" || fail "rank 0 did not exit"
[[ $(grep -c "count_inc=2 size=2" "$out") -eq 2 ]] || fail "the survivors did not finish in a round of 2"
grep -qF "cannot complete: rank 0 has shut down and will never submit it" "$out" \
  || fail "no message named rank 0 as the rank that left"
if grep -E "rank [12] failed" "$out"; then fail "a survivor was blamed for rank 0's exit"; fi
echo "rank0_exit: the survivors went on, and no message blamed them"
