#!/usr/bin/env bash
# The device check rehearsed without a GPU (scripts/gpu/check.sh --rehearse):
#   check_rehearsal_test.sh SOURCE_DIR full      configure and build as CI's Release build does
#       (its compiler cache: scripts/ccache-env.sh; a build folder beside CI's `build`, so the
#       cached paths match), every gpu test and bench/gpu script skips, the report is written
#   check_rehearsal_test.sh SOURCE_DIR deadline  a 25 s deadline with the first step hanging
#       (COHORT_CHECK_STALL_STEP=environment): it is stopped when only the 15 s kept for the report
#       are left, every later step is reported as not reached, exit 3
set -uo pipefail
src=${1:?usage: check_rehearsal_test.sh SOURCE_DIR full|deadline}
what=${2:?usage: check_rehearsal_test.sh SOURCE_DIR full|deadline}
source "$src/scripts/ccache-env.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out/report.md" 2>/dev/null; exit 1; }

if [[ $what == full ]]; then
  bash "$src/scripts/gpu/check.sh" --rehearse --deadline-s 400 --out "$out" \
    --build-dir "$src/build-gpu-rehearsal" >"$out/console.log" 2>&1
  rc=$?
  ((rc == 0)) || { tail -40 "$out/console.log"; fail "check.sh --rehearse exited $rc"; }
  grep -q '^| gpu.probe | Skipped |' "$out/report.md" || fail "gpu.probe is not reported skipped"
  grep -q 'Nothing: every step ran.' "$out/report.md" || fail "a step was not reached"
  [[ -s $out/logs.tar.gz ]] || fail "no logs.tar.gz"
  echo "PASS (rehearsal: every gpu test skipped, report written)"
else
  COHORT_CHECK_STALL_STEP=environment bash "$src/scripts/gpu/check.sh" --rehearse \
    --deadline-s 25 --out "$out" --build-dir "$src/build-gpu-deadline" >"$out/console.log" 2>&1
  rc=$?
  ((rc == 3)) || { tail -40 "$out/console.log"; fail "exit $rc, not 3 (deadline)"; }
  grep -q '^| environment | timed out |' "$out/report.md" || fail "environment: not timed out"
  for step in configure build_tests tests build_bench bench; do
    grep -q "^- $step\$" "$out/report.md" || fail "$step is not listed as not reached"
  done
  echo "PASS (deadline: the hanging step stopped, the rest reported not reached)"
fi
