#!/usr/bin/env bash
# The CI smoke test of bench/peers (issue 28), offline: install.sh with pip cut off from any index
# must record why torch 2.x could not be installed; then run.sh --quick for Cohort, with Horovod
# (never installed) and TorchFT (failed) asked for too, must write a table that parses back with
# Cohort's figures and names each missing peer with its reason instead of leaving a silent gap.
# The recovery workload's --quick (Cohort alone: one worker SIGKILLs itself, a replacement joins)
# must give Cohort's kill figures with no lost and no duplicated sample.
# Usage: peers_quick.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: peers_quick.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
peers=$here/../../bench/peers
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PEERS_DIR=$out/peers
mkdir -p "$out/no-wheels"
if PIP_NO_INDEX=1 PIP_FIND_LINKS=$out/no-wheels "$peers/install.sh" --peers torch2; then
  echo "FAIL: install.sh succeeded without an index" >&2; exit 1
fi
"$peers/run.sh" "$build" --quick --workloads allreduce,recovery --systems cohort,horovod,torchft \
  --out "$out/run"
md=$out/run/allreduce.md
/usr/bin/python3 "$peers/report.py" --workload allreduce --parse "$md" --expect cohort:2
expect() {
  grep -q "$1" "$md" || { echo "FAIL: the table lacks '$1'" >&2; cat "$md" >&2; exit 1; }
}
expect '^| Horovod | .* | not installed: run bench/peers/install.sh'
expect '^| TorchFT | .* | could not be installed: pip install torch==[0-9.]* torchft==0.2.0 failed'
[ -s "$out/run/allreduce.svg" ] || { echo "FAIL: no plot" >&2; exit 1; }
md=$out/run/recovery.md
expect '^| Cohort | [0-9.]* | [0-9.]* | 0 | 0 | [0-9]* | 1 |$'
echo "PASS (peers_quick)"
