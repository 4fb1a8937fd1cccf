#!/usr/bin/env bash
# Host leaders: 4 ranks as 2 hosts of 2 run the collectives checks. With leaders (SETTING 1, or
# auto: the default, unset, since the job spans two hosts with two ranks each), rank 3 reaches
# rank 0 through rank 2, its host's leader, and rank 1 directly (rank 0 leads its own host);
# with SETTING 0 (--no-control-leaders) every rank reaches rank 0 directly. The runtime's debug
# lines say which way each rank's control channel went.
#   leaders.sh COHORTRUN COLLECTIVES_CHECK SETTING   (SETTING: 1, auto or 0)
set -euo pipefail
cohortrun=$1 worker=$2 setting=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
flags=()
case $setting in
1) flags=(--control-leaders) ;;
0) flags=(--no-control-leaders) ;;
auto) unset COHORT_CONTROL_LEADERS ;;
*) echo "FAIL: unknown setting $setting"; exit 1 ;;
esac
COHORT_LOG_LEVEL=debug "$cohortrun" -np 4 -H 127.0.0.1:2,127.0.0.2:2 "${flags[@]}" "$worker" \
  >"$out" 2>&1 || { cat "$out"; echo "FAIL: the job failed"; exit 1; }
expect() { grep -qF -- "$1" "$out" || { cat "$out"; echo "FAIL: missing: $1"; exit 1; }; }
for r in 0 1 2 3; do
  grep -qx "\[$r\] rank $r: [0-9]* checks passed" "$out" || { cat "$out"; echo "FAIL: rank $r"; exit 1; }
done
if [[ $setting == 0 ]]; then
  if grep -q "cohort DEBUG: control: rank" "$out"; then
    cat "$out"; echo "FAIL: a rank took a host leader with --no-control-leaders"; exit 1
  fi
  echo "leaders: 4 ranks on 2 hosts passed the collectives checks over the star"
  exit 0
fi
expect "[0] cohort DEBUG: control: rank 0 on host 127.0.0.1: leading 2 rank(s) connected here (ranks 1 to 2)"
expect "[1] cohort DEBUG: control: rank 1 on host 127.0.0.1: through rank 0, this host's leader at 127.0.0.1:"
expect "[2] cohort DEBUG: control: rank 2 on host 127.0.0.2: leading 1 rank(s) connected here (rank 3)"
expect "[3] cohort DEBUG: control: rank 3 on host 127.0.0.2: through rank 2, this host's leader at 127.0.0.2:"
echo "leaders ($setting): 4 ranks on 2 hosts passed the collectives checks through their leaders"
