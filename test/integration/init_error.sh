#!/usr/bin/env bash
# A COHORT_TIMELINE that rank 0 cannot write: every rank's init() fails with that cause, at once
# (rank 0 publishes it in place of the control address), not only rank 0's while the others are
# told that rank 0 closed a connection. What lies at the path is never followed, truncated or
# waited on: a missing directory, a symbolic link (to a file, dangling), a FIFO without a reader
# (rank 0 used to block in open() until the job failed with "rank(s) 0 did not arrive"), a
# directory and /dev/null. The workers get the variable behind cohortrun's back (env), since
# cohortrun itself refuses such a path before any worker starts (checked here too). Also in a
# world of one.
set -euo pipefail
cohortrun=$1 worker=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { cat "$tmp/out"; echo "FAIL: $*"; exit 1; }

echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link"
ln -s "$tmp/absent" "$tmp/dangling"
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
refused() {  # refused PATH: the words after "COHORT_TIMELINE: " that every rank is told
  case $1 in
    */missing/*) echo "cannot write '$1': its directory '$tmp/missing' cannot be opened: No such file or directory" ;;
    */link | */dangling) echo "'$1' is a symbolic link; Cohort writes only regular files" ;;
    */fifo) echo "'$1' is a FIFO; Cohort writes only regular files" ;;
    */dir) echo "'$1' is a directory; Cohort writes only regular files" ;;
    /dev/null) echo "'$1' is a character device; Cohort writes only regular files" ;;
  esac
}

for path in "$tmp/missing/timeline.json" "$tmp/link" "$tmp/dangling" "$tmp/fifo" "$tmp/dir" /dev/null; do
  cause="InvalidArgument: COHORT_TIMELINE: $(refused "$path")"
  # Bounded well below COHORT_TIMEOUT_SECONDS (20 s in ctest): "at once", not after a timeout.
  timeout -k 2 10 "$cohortrun" -np 3 env COHORT_TIMELINE="$path" "$worker" >"$tmp/out" 2>&1 ||
    fail "cohortrun failed or was killed at 10 s, COHORT_TIMELINE=$path"
  for r in 0 1 2; do
    grep -qxF -- "[$r] rank $r: $cause" "$tmp/out" || fail "rank $r was not told: $cause"
  done
  timeout -k 2 10 env COHORT_TIMELINE="$path" "$worker" >"$tmp/out" 2>&1 || fail "the lone worker failed"
  grep -qxF -- "rank -: $cause" "$tmp/out" || fail "a world of one was not told: $cause"

  # cohortrun sees the variable: refused before any worker starts (exit 2, no worker ran).
  rc=0
  COHORT_TIMELINE=$path timeout -k 2 10 "$cohortrun" -np 3 "$worker" >"$tmp/out" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "cohortrun exited $rc, expected 2, COHORT_TIMELINE=$path"
  grep -qxF -- "cohortrun: COHORT_TIMELINE: $(refused "$path") (checked before any worker started)" \
    "$tmp/out" || fail "cohortrun did not refuse $path before starting workers"
  ! grep -q "rank" "$tmp/out" || fail "a worker started"
done

[[ ! -e $tmp/missing ]] || fail "a timeline directory was made"
[[ $(cat "$tmp/victim") == precious ]] || fail "the link's target was written"
[[ -L $tmp/link && -L $tmp/dangling && -p $tmp/fifo ]] || fail "a refused entry was replaced"
[[ ! -e $tmp/absent ]] || fail "the dangling link's target was made"
[[ -z $(ls -A "$tmp/dir") ]] || fail "something was written into the directory"
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
[[ $(ls -A "$tmp" | wc -l) == 6 ]] || { ls -la "$tmp"; fail "a temporary file was left"; }
echo "init_error: every rank was told at once why rank 0 could not write its timeline"
