#!/usr/bin/env bash
# Runs one pytest file on every rank of a cohortrun job and passes only if every rank's pytest
# passed (cohortrun prefixes each line with "[rank] ").
#   run_pytest.sh COHORTRUN PYTHON NP TEST_FILE
set -uo pipefail
cohortrun=$1 python=$2 np=$3 file=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$cohortrun" -np "$np" "$python" -m pytest -q -p no:cacheprovider -p no:hypothesispytest "$file" \
  >"$out" 2>&1
rc=$?
cat "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: cohortrun exited $rc"; exit 1; }
for ((r = 0; r < np; r++)); do
  grep -Eq "^\[$r\] [0-9]+ passed" "$out" || { echo "FAIL: rank $r did not pass"; exit 1; }
  if grep -Eq "^\[$r\] .*[0-9]+ (failed|error)" "$out"; then echo "FAIL: rank $r failed"; exit 1; fi
done
echo "PASS ($file, -np $np)"
