#!/usr/bin/env bash
# cohortrun's rendezvous port under a flood of connections that are not workers: about 1,100 idle
# connections while an elastic job runs (the port listens on every interface with a discovery
# script). The workers must still check in, a new worker must join, and stderr must stay short.
#   cohortrun_flood_test.sh COHORTRUN FAKE_WORKER
set -euo pipefail
cohortrun=$1 worker=$2 scenario=flood
source "$(dirname "$0")/elastic_test_lib.sh"
ulimit -n 4096  # this shell holds the flood's descriptors

set_hosts localhost:2
start --verbose "${discovery[@]}" --min-np 2 -- --at '1:*' finish
wait_for "$tmp/err" "$(round 0 'size 2: .*')"
addr=$(sed -n 's/.*rendezvous server on \(.*\)$/\1/p' "$tmp/err" | sed -n 1p)
port=${addr##*:}
[[ -n $port ]] || fail "no rendezvous port in the launcher's log"
for _ in $(seq 1100); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || fail "could not open a flood connection"
done
# The job grows while the flood's connections are still open here.
set_hosts localhost:3
wait_for "$tmp/err" "$(round 1 'size 3: \[0\] worker 0 localhost:0, \[1\] worker 1 localhost:1, \[2\] worker 2 localhost:2')"
expect_exit 0
for r in 0 1 2; do expect "$tmp/out" "\[$r\] worker $r round 1 rank $r size 3"; done
expect_no "$tmp/err" ".*retiring slot.*"
expect_no "$tmp/err" ".*refusing.*"
rejected=$(grep -c "rendezvous: rejected" "$tmp/err" || true)
(( rejected <= 3 )) || fail "$rejected lines of rejected connections: not rate-limited"
(( $(wc -c <"$tmp/err") < 100000 )) || fail "stderr grew to $(wc -c <"$tmp/err") bytes"
echo "PASS ($scenario): $rejected rejection line(s), $(wc -c <"$tmp/err") bytes of stderr"
