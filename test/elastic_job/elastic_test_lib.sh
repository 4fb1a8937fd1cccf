# Shared by the elastic end-to-end tests (cohortrun_elastic_test.sh with a fake worker,
# test/scenarios/elastic_scenarios.sh with the real trainer): a temp dir, a discovery script that
# prints $tmp/hosts, cohortrun in the background, and bounded waits for log lines.
# The sourcing script sets $cohortrun, $worker and $scenario first.
tmp=$(mktemp -d)
job=""
cleanup() {
  if [[ -n $job ]] && kill -0 "$job" 2>/dev/null; then kill -KILL "$job" 2>/dev/null || true; fi
  # Workers of a job cut short (their arguments name $tmp): none may outlive the test.
  pkill -KILL -f -- "$tmp/" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL ($scenario): $*"
  echo "--- stdout:"; cat "$tmp/out" 2>/dev/null || true
  echo "--- stderr:"; cat "$tmp/err" 2>/dev/null || true
  exit 1
}

# The discovery script prints $tmp/hosts, or fails while $tmp/broken exists.
cat >"$tmp/discover.sh" <<EOF
#!/bin/sh
if [ -e "$tmp/broken" ]; then echo "discovery backend unreachable" >&2; exit 3; fi
cat "$tmp/hosts"
EOF
chmod +x "$tmp/discover.sh"
set_hosts() {  # set_hosts LINE...: replaced in one rename, so a run never sees half a file
  printf '%s\n' "$@" >"$tmp/hosts.new"
  mv "$tmp/hosts.new" "$tmp/hosts"
}
discovery=(--host-discovery-script "$tmp/discover.sh" --discovery-interval 0.05)

start() {  # start COHORTRUN_ARGS... -- WORKER_ARGS...: cohortrun in the background
  local args=()
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  shift
  "$cohortrun" --term-grace-seconds 2 "${args[@]}" "$worker" "$@" >"$tmp/out" 2>"$tmp/err" &
  job=$!
}
wait_for() {  # wait_for FILE REGEX: a whole line of FILE matches REGEX within 30 s
  for _ in $(seq 600); do
    grep -qx -- "$2" "$1" && return 0
    kill -0 "$job" 2>/dev/null || { grep -qx -- "$2" "$1" && return 0; fail "cohortrun ended before: $2"; }
    sleep 0.05
  done
  fail "no line matching '$2' in $1 within 30 s"
}
expect_exit() {  # expect_exit CODE: cohortrun ends within 60 s with CODE
  for _ in $(seq 1200); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$job" 2>/dev/null && fail "cohortrun still running after 60 s"
  local rc=0
  wait "$job" || rc=$?
  job=""
  [[ $rc -eq $1 ]] || fail "cohortrun exited $rc, expected $1"
}
expect() {  # expect FILE REGEX: a whole line matches
  grep -qx -- "$2" "$1" || fail "no line matching '$2' in $1"
}
expect_no() {  # expect_no FILE REGEX: no line matches
  if grep -qx -- "$2" "$1"; then fail "unexpected line matching '$2' in $1"; fi
}
round() {  # round N: the regex of the launcher's line for round N
  echo "\[cohortrun\] round $1 ([0-9]* resets\{0,1\}): $2"
}

