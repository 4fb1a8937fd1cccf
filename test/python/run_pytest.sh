#!/usr/bin/env bash
# Runs one pytest file on every rank of a cohortrun job and passes only if every rank's pytest
# passed (cohortrun prefixes each line with "[rank] ").
# With COHORT_TEST_DEVICE=cuda (the ctest variants labelled gpu) the tensors go on this machine's
# GPU (conftest.py); without a usable one it prints one SKIP line and exits 77 before launching.
# On the GPU pytest stops after 2 failures: a broken device path would otherwise make every later
# test wait out COHORT_TIMEOUT_SECONDS, and the device check has minutes for all its tests.
#   run_pytest.sh COHORTRUN PYTHON NP TEST_FILE
set -uo pipefail
cohortrun=$1 python=$2 np=$3 file=$4
pytest_args=()
case ${COHORT_TEST_DEVICE:-cpu} in
  cpu) ;;
  cuda)
    pytest_args=(--maxfail=2)
    why=$(cd "$(dirname "$file")" &&
      "$python" -c 'import cohort_test_device as d; print(d.unusable() or "")' 2>&1) ||
      { echo "FAIL: cannot tell whether the GPU is usable: $why"; exit 1; }
    [[ -z $why ]] || { echo "SKIP ($file, -np $np): $why"; exit 77; } ;;
  *) echo "FAIL: COHORT_TEST_DEVICE=$COHORT_TEST_DEVICE is invalid: must be cpu or cuda"; exit 1 ;;
esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$cohortrun" -np "$np" "$python" -m pytest -q -p no:cacheprovider -p no:hypothesispytest \
  "${pytest_args[@]}" "$file" >"$out" 2>&1
rc=$?
cat "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: cohortrun exited $rc"; exit 1; }
for ((r = 0; r < np; r++)); do
  grep -Eq "^\[$r\] [0-9]+ passed" "$out" || { echo "FAIL: rank $r did not pass"; exit 1; }
  if grep -Eq "^\[$r\] .*[0-9]+ (failed|error)" "$out"; then echo "FAIL: rank $r failed"; exit 1; fi
done
echo "PASS ($file, -np $np)"
