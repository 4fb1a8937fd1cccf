#!/usr/bin/env bash
# Nothing of the shared-memory path outlives a job: the segments (the data plane's and the control
# plane's) are unlinked memfds (no name in /dev/shm or any file system) and the meeting sockets
# are abstract, so when the processes go, however they go, so does everything. Checked for a job
# that ends, and for one whose every process is SIGKILLed while it trains: no file named for
# Cohort appears in /dev/shm or /tmp, and the running workers map their segments as
# "memfd:cohort-shm (deleted)" and "memfd:cohort-control (deleted)".
#   shm_leftovers.sh COHORTRUN SHM_RESET_CHECK
set -euo pipefail
cohortrun=$1 worker=$2
tmp=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
touch "$tmp/marker"
named_files() {
  find /dev/shm /tmp -maxdepth 2 -newer "$tmp/marker" \
    \( -name '*cohort-shm*' -o -name '*cohort-control*' \) 2>/dev/null
}

# A job that ends (5 resets: six segments of each kind made and dropped).
"$cohortrun" -H localhost:3 --min-np 3 "$worker" 5 >"$tmp/out1" 2>&1 || {
  cat "$tmp/out1"
  fail "the job failed"
}
grep -q 'shm_reset_check: 5 resets, passed' "$tmp/out1" || fail "the job did not check its resets"
[[ -z $(named_files) ]] || fail "files left: $(named_files)"

# A job SIGKILLed while it resets and trains: find its workers mapping a segment first.
"$cohortrun" -H localhost:3 --min-np 3 "$worker" 1000000 >"$tmp/out2" 2>&1 &
launcher=$!
workers=()
for _ in $(seq 300); do  # up to 30 s for the three workers to map their segments
  mapfile -t workers < <(pgrep -P "$launcher" || true)
  mapped=0
  for pid in "${workers[@]}"; do
    maps=$(cat "/proc/$pid/maps" 2>/dev/null || true)
    [[ $maps == *'memfd:cohort-shm (deleted)'* && $maps == *'memfd:cohort-control (deleted)'* ]] &&
      mapped=$((mapped + 1))
  done
  ((mapped == 3)) && break
  sleep 0.1
done
((mapped == 3)) || { cat "$tmp/out2"; fail "the workers did not all map both segments"; }
kill -9 "$launcher" "${workers[@]}"
wait "$launcher" 2>/dev/null || true
gone() {  # gone PID: exited, or a zombie (whose memory is already freed)
  [[ ! -e /proc/$1 ]] || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}
for pid in "${workers[@]}"; do
  for _ in $(seq 100); do gone "$pid" && break; sleep 0.05; done
  gone "$pid" || fail "worker $pid outlived SIGKILL"
done
[[ -z $(named_files) ]] || fail "files left: $(named_files)"
echo "PASS: nothing left after a job that ended and after one SIGKILLed"
