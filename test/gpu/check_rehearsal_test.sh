#!/usr/bin/env bash
# The device check rehearsed without a GPU (scripts/gpu/check.sh --rehearse):
#   check_rehearsal_test.sh SOURCE_DIR BUILD_DIR full     scripts/gpu/pack.sh packs the wheel of
#       this build (CI's Release build, a COHORT_WHEEL one: no compile) for its Python and the
#       build's gpu tests; check.sh installs it into a fresh environment over that Python's
#       packages; every packed test and bench skips; the report is written
#   check_rehearsal_test.sh SOURCE_DIR BUILD_DIR deadline a 25 s deadline with the first step
#       hanging (COHORT_CHECK_STALL_STEP=environment): it is stopped when only the 15 s kept for
#       the report are left, every later step is reported as not reached, exit 3
set -uo pipefail
src=${1:?usage: check_rehearsal_test.sh SOURCE_DIR BUILD_DIR full|deadline}
build=${2:?usage: check_rehearsal_test.sh SOURCE_DIR BUILD_DIR full|deadline}
what=${3:?usage: check_rehearsal_test.sh SOURCE_DIR BUILD_DIR full|deadline}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out/report.md" 2>/dev/null; exit 1; }
python=$(sed -n 's/^COHORT_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
[[ -n $python ]] || fail "$build has no Python package"

if [[ $what == full ]]; then
  PYTHON=$python COHORT_WHEEL_BUILD_DIR=$build COHORT_TESTS_FROM=$build \
    bash "$src/scripts/gpu/pack.sh" "$out/pack" >"$out/pack.log" 2>&1 ||
    { cat "$out/pack.log"; fail "pack.sh"; }
  grep -q '^add_test(python.gpu.test_cuda.np1 ' "$out/pack/tests/CTestTestfile.cmake" ||
    fail "the packed tests lack python.gpu.test_cuda.np1"
  bash "$src/scripts/gpu/check.sh" --rehearse --deadline-s 400 --out "$out" --pack "$out/pack" \
    --python "$python" >"$out/console.log" 2>&1
  rc=$?
  ((rc == 0)) || { tail -40 "$out/console.log"; fail "check.sh --rehearse exited $rc"; }
  grep -q '^| gpu.probe | Skipped |' "$out/report.md" || fail "gpu.probe is not reported skipped"
  grep -q '^| python.gpu.elastic.kill | Skipped |' "$out/report.md" ||
    fail "python.gpu.elastic.kill is not reported skipped"
  grep -q '^### staged_small: skipped (no GPU)' "$out/report.md" || fail "staged_small: not skipped"
  grep -q 'Nothing: every step ran.' "$out/report.md" || fail "a step was not reached"
  [[ -s $out/logs.tar.gz ]] || fail "no logs.tar.gz"
  echo "PASS (rehearsal: the wheel installed, every gpu test and bench skipped, report written)"
else
  mkdir -p "$out/pack/tests"
  COHORT_CHECK_STALL_STEP=environment bash "$src/scripts/gpu/check.sh" --rehearse \
    --deadline-s 25 --out "$out" --pack "$out/pack" --python "$python" >"$out/console.log" 2>&1
  rc=$?
  ((rc == 3)) || { tail -40 "$out/console.log"; fail "exit $rc, not 3 (deadline)"; }
  grep -q '^| environment | timed out |' "$out/report.md" || fail "environment: not timed out"
  for step in install tests bench; do
    grep -q "^- $step\$" "$out/report.md" || fail "$step is not listed as not reached"
  done
  echo "PASS (deadline: the hanging step stopped, the rest reported not reached)"
fi
