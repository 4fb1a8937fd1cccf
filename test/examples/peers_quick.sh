#!/usr/bin/env bash
# The CI smoke test of bench/peers (issue 28): run.sh --quick for Cohort alone, with a peer asked
# for but not installed, must write a table that parses back with Cohort's figures and names the
# missing peer with its reason instead of leaving a silent gap. No peer is installed.
# Usage: peers_quick.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: peers_quick.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
peers=$here/../../bench/peers
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PEERS_DIR=$out/no-peers "$peers/run.sh" "$build" --quick --systems cohort,horovod --out "$out"
/usr/bin/python3 "$peers/report.py" --parse "$out/allreduce.md" --expect cohort:2
grep -q '^| Horovod | .* | not installed: run bench/peers/install.sh' "$out/allreduce.md" ||
  { echo "FAIL: the table does not say why Horovod is missing" >&2; cat "$out/allreduce.md" >&2; exit 1; }
[ -s "$out/allreduce.svg" ] || { echo "FAIL: no plot" >&2; exit 1; }
echo "PASS (peers_quick)"
