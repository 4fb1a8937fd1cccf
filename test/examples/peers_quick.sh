#!/usr/bin/env bash
# The CI smoke test of bench/peers (issue 28), offline: install.sh with pip cut off from any index
# must record why torch 2.x could not be installed; then run.sh --quick (every workload) for
# Cohort, with Horovod (never installed) and TorchFT (failed) asked for too, must write tables
# that parse back with Cohort's figures and name each missing peer with its reason instead of
# leaving a silent gap. The recovery workload's --quick (Cohort alone: one worker SIGKILLs itself,
# a replacement joins) must give Cohort's kill figures with no lost and no duplicated sample.
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
"$peers/run.sh" "$build" --quick --workloads allreduce,step,commit,recovery --systems cohort,horovod,torchft \
  --out "$out/run"
/usr/bin/python3 "$peers/report.py" --workload commit --parse "$out/run/commit.md" --expect cohort:2
cohort_commit='^| Cohort | 2 | TorchState commit / restore | [0-9.]* | [0-9.]* | [0-9.]* |'
grep -q "$cohort_commit" "$out/run/commit.md" ||
  { echo "FAIL: the commit table lacks Cohort's commit" >&2; cat "$out/run/commit.md" >&2; exit 1; }
/usr/bin/python3 "$peers/report.py" --workload step --parse "$out/run/step.md" --expect cohort:2
for workload in step commit recovery; do
  [ -s "$out/run/$workload.svg" ] || { echo "FAIL: no plot of the $workload workload" >&2; exit 1; }
done
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
