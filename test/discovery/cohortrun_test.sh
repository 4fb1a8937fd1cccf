#!/usr/bin/env bash
# cohortrun end to end with real worker processes: placement, output prefixes, the secret's
# route, failure reports, stopping the others, and precise errors for bad arguments.
set -euo pipefail
cohortrun=$1 probe=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_line() {  # expect_line FILE LINE
  grep -qxF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "missing line: $2"; }
}

# Placement on one host, four slots.
"$cohortrun" -np 4 "$probe" env >"$tmp/out" 2>"$tmp/err"
for r in 0 1 2 3; do
  expect_line "$tmp/out" "[$r] rank=$r size=4 local=$r/4 cross=0/1 host=127.0.0.1 secret_len=64 secret_in_argv=0"
done

# Two local "hosts" with two slots each: local and cross ranks follow the hosts.
"$cohortrun" -H localhost:2,127.0.0.1:2 "$probe" env >"$tmp/out"
expect_line "$tmp/out" "[1] rank=1 size=4 local=1/2 cross=0/2 host=127.0.0.1 secret_len=64 secret_in_argv=0"
expect_line "$tmp/out" "[2] rank=2 size=4 local=0/2 cross=1/2 host=127.0.0.1 secret_len=64 secret_in_argv=0"

# A hostfile, with -np below the slot count.
printf '# test\nlocalhost slots=1\n127.0.0.1 slots=3\n' >"$tmp/hosts"
"$cohortrun" --hostfile "$tmp/hosts" -np 3 "$probe" env >"$tmp/out"
expect_line "$tmp/out" "[2] rank=2 size=3 local=1/2 cross=0/1 host=127.0.0.1 secret_len=64 secret_in_argv=0"
[[ $(wc -l <"$tmp/out") -eq 3 ]] || fail "expected 3 workers"

# A final line without a newline is still delivered, prefixed.
"$cohortrun" -np 1 "$probe" partial >"$tmp/out"
expect_line "$tmp/out" "[0] no newline at the end"

# A rank that exits non-zero: reported by rank and status, the others stopped, non-zero exit.
if "$cohortrun" -np 3 "$probe" exit 7 1 >"$tmp/out" 2>"$tmp/err"; then fail "cohortrun succeeded"; fi
grep -q "rank 1 (pid [0-9]* on localhost) exited with status 7; stopping the other workers" "$tmp/err" \
  || { cat "$tmp/err"; fail "exit status not reported"; }
expect_line "$tmp/out" "[1] exiting with 7"

# A rank killed by a signal.
if "$cohortrun" -np 2 "$probe" signal 9 0 >"$tmp/out" 2>"$tmp/err"; then fail "cohortrun succeeded"; fi
grep -q "rank 0 (pid [0-9]* on localhost) was killed by signal 9 (SIGKILL)" "$tmp/err" \
  || { cat "$tmp/err"; fail "signal not reported"; }

# SIGTERM to cohortrun reaches the workers, and cohortrun exits non-zero.
"$cohortrun" -np 2 "$probe" wait >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do [[ $(grep -c waiting "$tmp/out" || true) -eq 2 ]] && break; sleep 0.05; done
kill -TERM $pid
if wait $pid; then fail "cohortrun exited 0 after SIGTERM"; fi
grep -q "received SIGTERM; stopping the workers" "$tmp/err" || { cat "$tmp/err"; fail "no SIGTERM report"; }

# Bad arguments give precise errors.
check_error() {  # check_error EXPECTED ARGS...
  local expected=$1; shift
  if "$cohortrun" "$@" >"$tmp/out" 2>&1; then fail "cohortrun $* succeeded"; fi
  grep -qF -- "$expected" "$tmp/out" || { cat "$tmp/out"; fail "no '$expected' for: $*"; }
}
check_error "-np 5 needs 5 slots but the hosts offer only 4" -np 5 -H localhost:4 "$probe"
check_error "slot count 'x'" -H localhost:x "$probe"
check_error "is not a valid host name" -H "a b" "$probe"
check_error "cannot read hostfile" --hostfile "$tmp/missing" "$probe"
printf 'localhost slots=two\n' >"$tmp/bad"
check_error "$tmp/bad:1: slot count 'two'" --hostfile "$tmp/bad" "$probe"
check_error "launching over ssh is not implemented yet" -H otherhost:1 "$probe"
check_error "cannot start '/nonexistent/worker'" -np 1 /nonexistent/worker
echo "cohortrun end-to-end: all checks passed"
