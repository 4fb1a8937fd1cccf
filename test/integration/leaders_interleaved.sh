#!/usr/bin/env bash
# Host leaders (COHORT_CONTROL_LEADERS=1) where a host's ranks are not consecutive: mpirun starts
# 5 ranks, each in a UTS namespace of its own named after its host, hostA hostB hostA hostC hostB
# (rank order), so that the runtime groups them by host name as it would on real machines. Every
# rank's control channel must go through the lowest rank of its own host (ranks 0, 1 and 3 lead),
# and the collectives checks pass. Root only (unshare --uts); skipped (77) elsewhere.
#   leaders_interleaved.sh COLLECTIVES_CHECK MPIRUN [MPIRUN_ARGS...]
set -euo pipefail
worker=$1
shift
unshare --uts true 2>/dev/null || { echo "SKIP: unshare --uts needs root"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# mpirun passes no variables to a second app context: each rank's command line sets them. Every
# rank listens on loopback; only its host name differs.
hosts=(hostA hostB hostA hostC hostB)
apps=()
for host in "${hosts[@]}"; do
  (( ${#apps[@]} == 0 )) || apps+=(:)
  apps+=(-np 1 unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host"
         env COHORT_CONTROL_LEADERS=1 COHORT_HOSTNAME=127.0.0.1 COHORT_LOG_LEVEL=debug
         "COHORT_TIMEOUT_SECONDS=${COHORT_TIMEOUT_SECONDS:-20}" "$worker")
done
timeout 100 "$@" "${apps[@]}" >"$out" 2>&1 || { cat "$out"; echo "FAIL: the job failed"; exit 1; }
expect() { grep -qF -- "$1" "$out" || { cat "$out"; echo "FAIL: missing: $1"; exit 1; }; }
expect "cohort DEBUG: control: rank 0 on host hostA: leading 3 rank(s) connected here (ranks 1 to 3)"
expect "cohort DEBUG: control: rank 1 on host hostB: leading 1 rank(s) connected here (rank 4)"
expect "cohort DEBUG: control: rank 2 on host hostA: through rank 0, this host's leader at 127.0.0.1:"
expect "cohort DEBUG: control: rank 3 on host hostC: leading 0 rank(s) connected here (none)"
expect "cohort DEBUG: control: rank 4 on host hostB: through rank 1, this host's leader at 127.0.0.1:"
for r in 0 1 2 3 4; do
  grep -qx "rank $r: [0-9]* checks passed" "$out" || { cat "$out"; echo "FAIL: rank $r"; exit 1; }
done
echo "leaders_interleaved: 5 ranks on 3 interleaved hosts went through their own host's leader"
