#!/usr/bin/env bash
# The files cohortrun reads and writes, checked before any worker starts (docs/operations.md,
# "Files Cohort writes" and "Files cohortrun reads"), with real files, FIFOs, links, devices and
# pipes:
#   - a hostfile (--hostfile, the MPI Operator's OMPI_MCA_orte_default_hostfile) is read up to
#     1 MiB: /dev/zero under a 1 GiB memory limit and an oversize file are refused at once,
#     naming the file and the cap (the whole file used to be read: std::bad_alloc); a pipe works;
#   - --output-filename, --event-log, --metrics-file and --timeline-filename on a symbolic link,
#     a dangling link, a FIFO, a directory (or a file, for a directory) and /dev/null: exit 2 at
#     once, naming the path, no worker started, nothing followed;
#   - a link planted in the output directory where cohortrun makes a rank's directory is not
#     written through;
#   - the etcd TLS files of agent mode: /dev/zero and a FIFO are refused before etcd is asked.
#   files_test.sh COHORTRUN
set -euo pipefail
cohortrun=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "--- out:"; cat "$tmp/out"; echo "FAIL: $*"; exit 1; }
refused() {  # refused LINE COHORTRUN-ARGS...: exit 2 within 10 s, LINE on stderr, no worker
  local line=$1 rc=0
  shift
  timeout -k 2 10 "$cohortrun" "$@" >"$tmp/out" 2>&1 || rc=$?
  [[ $rc == 2 ]] || fail "exited $rc, expected 2: $*"
  grep -qxF -- "$line" "$tmp/out" || fail "missing line: $line"
  [[ ! -e $tmp/started ]] || fail "a worker started: $*"
}
worker=(touch "$tmp/started")

# Hostfiles. /dev/zero under a memory limit: refused by what it is, nothing read.
zero="cohortrun: hostfile '/dev/zero' is a character device; Cohort reads it only from a regular file or a pipe, of at most 1 MiB"
# A sanitizer build reserves terabytes of shadow memory at start and cannot run under the limit:
# there the refusal alone is checked.
limit=1048576
if grep -qE 'lib(a|t)san' < <(ldd "$cohortrun"); then limit=unlimited; fi
(ulimit -v "$limit" && refused "$zero" --hostfile /dev/zero -np 1 "${worker[@]}")
(ulimit -v "$limit" && OMPI_MCA_orte_default_hostfile=/dev/zero refused "$zero" -np 1 "${worker[@]}")
python3 -c 'import sys; sys.stdout.write("localhost slots=1\n" * 116509)' >"$tmp/big.hosts"
refused "cohortrun: hostfile '$tmp/big.hosts' holds 2097162 bytes, more than the 1 MiB Cohort reads of it" \
  --hostfile "$tmp/big.hosts" -np 1 "${worker[@]}"
timeout -k 2 20 "$cohortrun" --hostfile <(echo "localhost slots=2") echo piped >"$tmp/out" 2>&1 ||
  fail "a hostfile from a pipe failed"
grep -qxF "[1] piped" "$tmp/out" || fail "a hostfile from a pipe did not place two workers"

# What cohortrun and rank 0 write, on every kind of entry that is not a regular file.
echo precious >"$tmp/victim"
mkdir "$tmp/dir"
ln -s "$tmp/victim" "$tmp/link"
ln -s "$tmp/absent" "$tmp/dangling"
mkfifo "$tmp/fifo"
for flag in --event-log --metrics-file --timeline-filename; do
  for entry in link dangling fifo dir; do
    case $entry in
      link | dangling) kind="a symbolic link" ;;
      fifo) kind="a FIFO" ;;
      dir) kind="a directory" ;;
    esac
    what="'$tmp/$entry' is $kind; Cohort writes only regular files"
    [[ $flag == --timeline-filename ]] && what+=" (checked before any worker started)"
    refused "cohortrun: $flag: $what" -np 1 "$flag" "$tmp/$entry" "${worker[@]}"
  done
  what="'/dev/null' is a character device; Cohort writes only regular files"
  [[ $flag == --timeline-filename ]] && what+=" (checked before any worker started)"
  refused "cohortrun: $flag: $what" -np 1 "$flag" /dev/null "${worker[@]}"
done
link_dir="is a symbolic link; Cohort writes into a directory only by its own name, never through a link (name the directory it points to)"
ln -s "$tmp/dir" "$tmp/dirlink"
refused "cohortrun: --output-filename: '$tmp/dirlink' $link_dir" -np 1 --output-filename "$tmp/dirlink" "${worker[@]}"
refused "cohortrun: --output-filename: '$tmp/dangling' $link_dir" -np 1 --output-filename "$tmp/dangling" "${worker[@]}"
refused "cohortrun: --output-filename: '$tmp/fifo' is a FIFO, not a directory" -np 1 --output-filename "$tmp/fifo" "${worker[@]}"
refused "cohortrun: --output-filename: '$tmp/victim' is a regular file, not a directory" -np 1 --output-filename "$tmp/victim" "${worker[@]}"
refused "cohortrun: --output-filename: '/dev/null' is a character device, not a directory" -np 1 --output-filename /dev/null "${worker[@]}"
[[ $(cat "$tmp/victim") == precious && -z $(ls -A "$tmp/dir") && ! -e $tmp/absent && -p $tmp/fifo ]] ||
  fail "a refused entry or what it points to changed"

# A link planted where cohortrun makes rank 0's directory: the worker runs, its lines stay on the
# console, nothing is written where the link points.
mkdir -p "$tmp/logs"
ln -s "$tmp/dir" "$tmp/logs/rank.0"
timeout -k 2 20 "$cohortrun" -np 1 --output-filename "$tmp/logs" echo kept >"$tmp/out" 2>&1 ||
  fail "the job with a planted link failed"
grep -qxF "[0] kept" "$tmp/out" || fail "the worker's line is not on the console"
grep -qF "cohortrun: --output-filename: '$tmp/logs/rank.0' $link_dir; the console still has the output" "$tmp/out" ||
  fail "the planted link was not reported"
[[ -z $(ls -A "$tmp/dir") ]] || fail "the output was written through the planted link"

# Agent mode's TLS files: refused before etcd (none listens here) is asked anything.
agent=(--rdzv-backend etcd --rdzv-endpoints https://127.0.0.1:1 --rdzv-id files-test --nnodes 1
  --nproc-per-node 1)
export COHORT_SECRET=0000000000000000000000000000000000000000000000000000000000000000
refused "cohortrun: etcd: etcd CA file '/dev/zero' is a character device; Cohort reads it only from a regular file of at most 4 MiB" \
  "${agent[@]}" --rdzv-ca-file /dev/zero "${worker[@]}"
refused "cohortrun: etcd: etcd key file '$tmp/fifo' is a FIFO; Cohort reads it only from a regular file of at most 4 MiB" \
  "${agent[@]}" --rdzv-key-file "$tmp/fifo" "${worker[@]}"
echo "PASS: cohortrun's files"
