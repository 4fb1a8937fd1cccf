#!/usr/bin/env bash
# cohortrun end to end with real worker processes: placement, output prefixes, the secret's
# route, rendezvous through the launcher, failure reports, stopping the others, signal
# forwarding, and precise errors for bad arguments. Nothing here sleeps to order events.
set -euo pipefail
cohortrun=$1 probe=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_line() {  # expect_line FILE LINE: LINE appears as a whole line
  grep -qxF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "missing line: $2"; }
}
expect_lines() {  # expect_lines FILE N: the file has exactly N lines
  [[ $(wc -l <"$1") -eq $2 ]] || { echo "--- $1:"; cat "$1"; fail "expected $2 lines in $1"; }
}
expect_gone() {  # expect_gone FILE: every "waiting pid=N" worker listed in FILE has ended
  for pid in $(sed -n 's/.*waiting pid=\([0-9]*\)$/\1/p' "$1"); do
    if kill -0 "$pid" 2>/dev/null; then fail "worker pid $pid is still running"; fi
  done
}
ok="rdv=127.0.0.1:port secret_len=64 secret_in_argv=0"

# Placement on one host, four slots.
"$cohortrun" -np 4 "$probe" env >"$tmp/out" 2>"$tmp/err"
for r in 0 1 2 3; do
  expect_line "$tmp/out" "[$r] rank=$r size=4 local=$r/4 cross=0/1 host=127.0.0.1 $ok"
done
expect_lines "$tmp/out" 4
expect_lines "$tmp/err" 0

# Two local "hosts" with two slots each: local and cross ranks follow the hosts.
"$cohortrun" -H localhost:2,127.0.0.1:2 -- "$probe" env >"$tmp/out"
expect_line "$tmp/out" "[0] rank=0 size=4 local=0/2 cross=0/2 host=127.0.0.1 $ok"
expect_line "$tmp/out" "[1] rank=1 size=4 local=1/2 cross=0/2 host=127.0.0.1 $ok"
expect_line "$tmp/out" "[2] rank=2 size=4 local=0/2 cross=1/2 host=127.0.0.1 $ok"
expect_line "$tmp/out" "[3] rank=3 size=4 local=1/2 cross=1/2 host=127.0.0.1 $ok"
expect_lines "$tmp/out" 4

# A hostfile with comments and blank lines, and -np below the slot count.
printf '# test hosts\n\nlocalhost slots=1  # first\n127.0.0.1 slots=3\n' >"$tmp/hosts"
"$cohortrun" --hostfile "$tmp/hosts" -np 3 "$probe" env >"$tmp/out"
expect_line "$tmp/out" "[0] rank=0 size=3 local=0/1 cross=0/2 host=127.0.0.1 $ok"
expect_line "$tmp/out" "[1] rank=1 size=3 local=0/2 cross=1/2 host=127.0.0.1 $ok"
expect_line "$tmp/out" "[2] rank=2 size=3 local=1/2 cross=0/1 host=127.0.0.1 $ok"
expect_lines "$tmp/out" 3

# The workers meet through cohortrun's authenticated rendezvous server.
"$cohortrun" -np 3 "$probe" rendezvous >"$tmp/out"
for r in 0 1 2; do expect_line "$tmp/out" "[$r] met 3 of 3"; done

# stdout and stderr keep apart, each line prefixed; a last line without newline is delivered.
"$cohortrun" -np 2 "$probe" streams >"$tmp/out" 2>"$tmp/err"
for r in 0 1; do
  expect_line "$tmp/out" "[$r] to stdout"
  expect_line "$tmp/out" "[$r] no newline at the end"
  expect_line "$tmp/err" "[$r] to stderr"
done
expect_lines "$tmp/out" 4
expect_lines "$tmp/err" 2

# A rank that exits non-zero: reported by rank and status, the others stopped, non-zero exit.
rc=0; "$cohortrun" -np 3 "$probe" exit 7 1 >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc -ne 0 ]] || fail "cohortrun exited 0 although rank 1 failed"
grep -qx "cohortrun: rank 1 (pid [0-9]* on localhost) exited with status 7; stopping the other workers" \
  "$tmp/err" || { cat "$tmp/err"; fail "exit status not reported"; }
expect_line "$tmp/out" "[1] exiting with 7"
expect_gone "$tmp/out"

# A rank killed by a signal.
rc=0; "$cohortrun" -np 2 "$probe" signal 9 0 >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc -ne 0 ]] || fail "cohortrun exited 0 although rank 0 was killed"
grep -qx "cohortrun: rank 0 (pid [0-9]* on localhost) was killed by signal 9 (SIGKILL); stopping the other workers" \
  "$tmp/err" || { cat "$tmp/err"; fail "signal not reported"; }
expect_gone "$tmp/out"

# SIGTERM to cohortrun reaches the workers, and cohortrun exits non-zero. The test reads the
# workers' "waiting" lines through a FIFO, so it signals only once both are running.
mkfifo "$tmp/fifo"
"$cohortrun" -np 2 "$probe" wait >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
read -r -t 20 line1 <&3 && read -r -t 20 line2 <&3 || fail "workers did not start"
kill -TERM $pid
rc=0; wait $pid || rc=$?
exec 3<&-
[[ $rc -eq $((128 + 15)) ]] || fail "cohortrun exited $rc after SIGTERM, expected 143"
expect_line "$tmp/err" "cohortrun: received SIGTERM; stopping the workers"
printf '%s\n%s\n' "$line1" "$line2" >"$tmp/out"
expect_gone "$tmp/out"

# signal_stubborn SIGNAL FLAGS...: cohortrun FLAGS runs one worker that ignores SIGTERM and is
# sent SIGNAL once that worker started; sets rc (cohortrun's exit status) and line1 (the worker's
# first line), its stderr in $tmp/err.
signal_stubborn() {
  local sig=$1
  shift
  rm "$tmp/fifo"; mkfifo "$tmp/fifo"
  "$cohortrun" "$@" -np 1 "$probe" stubborn >"$tmp/fifo" 2>"$tmp/err" &
  pid=$!
  exec 3<"$tmp/fifo"
  read -r -t 20 line1 <&3 || fail "worker did not start"
  kill "-$sig" $pid
  rc=0; wait $pid || rc=$?
  exec 3<&-
}

# A worker that ignores SIGTERM is killed after the grace period.
signal_stubborn TERM --term-grace-seconds 0.2
[[ $rc -eq $((128 + 15)) ]] || fail "cohortrun exited $rc after SIGTERM, expected 143"
expect_line "$tmp/err" "cohortrun: workers still running 200 ms after being asked to stop; sending SIGKILL"
printf '%s\n' "$line1" >"$tmp/out"
expect_gone "$tmp/out"

# SIGINT is forwarded as SIGINT (the stubborn worker does not ignore it).
signal_stubborn INT
[[ $rc -eq $((128 + 2)) ]] || fail "cohortrun exited $rc after SIGINT, expected 130"
expect_line "$tmp/err" "cohortrun: received SIGINT; stopping the workers"
[[ $(grep -c SIGKILL "$tmp/err" || true) -eq 0 ]] || fail "SIGINT did not stop the worker"

# SIGUSR1 and SIGUSR2 are passed on and the job goes on; SIGHUP is forwarded and stops it.
rm "$tmp/fifo"; mkfifo "$tmp/fifo"
traps='trap "echo got USR1" USR1; trap "echo got USR2" USR2; trap "echo got HUP; exit 0" HUP'
"$cohortrun" -np 2 /bin/sh -c "$traps; echo ready; while :; do sleep 0.05; done" \
  >"$tmp/fifo" 2>"$tmp/err" &
pid=$!
exec 3<"$tmp/fifo"
read_two() {  # read_two WHAT: the next two lines are both workers' "WHAT"
  local a b
  read -r -t 20 a <&3 && read -r -t 20 b <&3 || fail "no two lines '$1'"
  [[ $(printf '%s\n' "$a" "$b" | sort | tr '\n' ' ') == "[0] $1 [1] $1 " ]] ||
    fail "expected both workers' '$1', got '$a' and '$b'"
}
read_two ready
for sig in USR1 USR2; do kill -$sig $pid; read_two "got $sig"; done
kill -HUP $pid
read_two "got HUP"
rc=0; wait $pid || rc=$?
exec 3<&-
[[ $rc -eq $((128 + 1)) ]] || fail "cohortrun exited $rc after SIGHUP, expected 129"
expect_line "$tmp/err" "[cohortrun] received SIGUSR1; passing it on to the workers"
expect_line "$tmp/err" "cohortrun: received SIGHUP; stopping the workers"

# Bad arguments give precise errors, exit status 2 (as documented), and nothing starts.
check_error() {  # check_error EXPECTED ARGS...
  local expected=$1; shift
  rc=0; "$cohortrun" "$@" >"$tmp/out" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || { cat "$tmp/out"; fail "cohortrun $* exited $rc, expected 2"; }
  grep -qxF -- "$expected" "$tmp/out" || { cat "$tmp/out"; fail "no line '$expected' for: $*"; }
}
check_error "cohortrun: -np 5 needs 5 slots but the hosts offer only 4" -np 5 -H localhost:4 "$probe"
check_error "cohortrun: -np must be at least 1, got 0" -np 0 "$probe"
check_error "cohortrun: unknown option '--max-jobs' before the program (see cohortrun --help)" \
  -np 1 --max-jobs 2 "$probe"
check_error "cohortrun: -np: 'four' is not a whole number" -np four "$probe"
check_error "cohortrun: give -np N, or hosts with -H or --hostfile" "$probe"
check_error "cohortrun: host list entry 'localhost:x': slot count 'x' is not a whole number between 1 and 4096" \
  -H localhost:x "$probe"
check_error "cohortrun: host list entry 'a b': 'a b' is not a valid host name" -H "a b" "$probe"
check_error "cohortrun: host 'localhost' is listed twice; give it one entry with the sum of its slots" \
  -H localhost,localhost:2 "$probe"
check_error "cohortrun: cannot read hostfile '$tmp/missing': No such file or directory" --hostfile "$tmp/missing" "$probe"
printf 'localhost slots=1\n# fine\nlocalhost slots=two\n' >"$tmp/bad"
check_error "cohortrun: $tmp/bad:3: slot count 'two' is not a whole number between 1 and 4096" \
  --hostfile "$tmp/bad" "$probe"
printf 'localhost cpus=2\n' >"$tmp/bad"
check_error "cohortrun: $tmp/bad:1: expected 'slots=N' after the host, got 'cpus=2'" \
  --hostfile "$tmp/bad" "$probe"
check_error "cohortrun: host 'otherhost' cannot be reached: cannot resolve 'otherhost': Name or service not known" \
  -H otherhost:1 "$probe"
check_error "cohortrun: cannot start '/nonexistent/worker' for rank 0: No such file or directory" \
  -np 1 /nonexistent/worker
# Numeric flags refuse NaN, infinities and values out of range, naming the flag. NaN used to pass
# and then be converted to milliseconds (undefined behaviour: workers killed at once).
for value in nan inf -inf -1 1e9 soon; do
  check_error "cohortrun: --start-timeout: '$value' is not a number of seconds from 0.001 to 86400 (see cohortrun --help)" \
    --start-timeout "$value" -np 1 "$probe" env
  check_error "cohortrun: --term-grace-seconds: '$value' is not a number of seconds from 0 to 3600 (see cohortrun --help)" \
    --term-grace-seconds="$value" -np 1 "$probe" env
done
for flag in --discovery-interval --discovery-timeout --checkin-timeout; do
  check_error "cohortrun: $flag: 'nan' is not a number of seconds from 0.001 to 86400 (see cohortrun --help)" \
    "$flag" nan -np 1 "$probe" env
done
check_error "cohortrun: --blacklist-cooldown-range: 'nan' is not a number of seconds from 0.001 to 86400 (see cohortrun --help)" \
  --blacklist-cooldown-range 1 nan -np 1 "$probe" env
check_error "cohortrun: --elastic-timeout: 'inf' is not a number of seconds from 0 to 31536000 (see cohortrun --help)" \
  --elastic-timeout inf -np 1 "$probe" env
check_error "cohortrun: --slots-per-host: 'nan' is not a whole number from 1 to 4096 (see cohortrun --help)" \
  --slots-per-host nan -np 1 "$probe" env
check_error "cohortrun: --min-np: '0' is not a whole number from 1 to 1048576 (see cohortrun --help)" \
  --min-np 0 -np 1 "$probe" env
check_error "cohortrun: --ssh-port: '70000' is not a whole number from 1 to 65535 (see cohortrun --help)" \
  --ssh-port 70000 -np 1 "$probe" env
check_error "cohortrun: program is required (see cohortrun --help)" -np 1
check_error "cohortrun: --rdzv-last-call: 'nan' is not a number of seconds from 0 to 3600 (see cohortrun --help)" \
  --rdzv-last-call nan -np 1 "$probe" env
check_error "cohortrun: --rdzv-last-call needs --rdzv-backend etcd" --rdzv-last-call 5 -np 1 "$probe" env
# -x NAME=VALUE and -x NAME (its value here) reach every worker; bad names are refused.
FROM_LAUNCHER=yes "$cohortrun" -x GIVEN=a=b -x FROM_LAUNCHER -np 2 /usr/bin/env >"$tmp/out" 2>&1
for r in 0 1; do expect_line "$tmp/out" "[$r] GIVEN=a=b"; expect_line "$tmp/out" "[$r] FROM_LAUNCHER=yes"; done
check_error "cohortrun: -x: NOT_SET_HERE is not set in cohortrun's environment (give -x NAME=VALUE)" \
  -x NOT_SET_HERE -np 1 "$probe" env
check_error "cohortrun: -x: cohortrun sets COHORT_RANK for each worker itself" \
  -x COHORT_RANK=3 -np 1 "$probe" env
check_error "cohortrun: -x: cohortrun sets HOROVOD_RANK for each worker itself" \
  -x HOROVOD_RANK=3 -np 1 "$probe" env
check_error "cohortrun: -x: '1A' is not an environment variable name" -x 1A=2 -np 1 "$probe" env
check_error "cohortrun: -x: '' is not an environment variable name" -x =2 -np 1 "$probe" env
# --output-filename: every rank's lines in DIR/rank.R/{stdout,stderr}; --console-ranks: only
# rank 1 on the console; --prefix-timestamp: the UTC time before each line, in both.
talk='echo "out $COHORT_RANK"; echo "err $COHORT_RANK" >&2'
"$cohortrun" --output-filename "$tmp/logs" --console-ranks 1 --prefix-timestamp -np 3 \
  /bin/sh -c "$talk" >"$tmp/out" 2>"$tmp/err"
stamp='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
grep -qxE "$stamp \[1\] out 1" "$tmp/out" || { cat "$tmp/out"; fail "no stamped rank 1 line"; }
grep -qxE "$stamp \[1\] err 1" "$tmp/err" || { cat "$tmp/err"; fail "no stamped rank 1 error"; }
[[ $(wc -l <"$tmp/out") -eq 1 && $(wc -l <"$tmp/err") -eq 1 ]] || fail "ranks 0 and 2 reached the console"
for r in 0 1 2; do
  grep -qxE "$stamp out $r" "$tmp/logs/rank.$r/stdout" || fail "no rank.$r/stdout"
  grep -qxE "$stamp err $r" "$tmp/logs/rank.$r/stderr" || fail "no rank.$r/stderr"
done
check_error "cohortrun: --console-ranks: '1-' is not a list of ranks such as 0 or 0,2-3" \
  --console-ranks 1- -np 1 "$probe" env
: >"$tmp/a_file"
check_error "cohortrun: --output-filename: cannot create directory '$tmp/a_file' (above '$tmp/a_file/logs'): Not a directory" \
  --output-filename "$tmp/a_file/logs" -np 1 "$probe" env
# The tunables' flags set their variables for the workers, over -x; horovodrun's names work too.
"$cohortrun" -x COHORT_CYCLE_TIME=9 --cycle-time-ms 2.5 --no-stall-check --hierarchical 0 -np 1 \
  /usr/bin/env >"$tmp/out" 2>&1
for line in COHORT_CYCLE_TIME=2.5 COHORT_STALL_CHECK_DISABLE=1 COHORT_HIERARCHICAL=0; do
  expect_line "$tmp/out" "[0] $line"
done
check_error "cohortrun: --cache-capacity: COHORT_CACHE_CAPACITY='lots' is invalid: expected a whole number from 0 to 16777216" \
  --cache-capacity lots -np 1 "$probe" env
check_error "cohortrun: '--timeline-filename=' has no value after '=' (see cohortrun --help)" \
  --timeline-filename= -np 1 "$probe" env
# --event-log of a static job: checked against docs/operations.md's table.
"$cohortrun" --event-log "$tmp/events.jsonl" -np 2 "$probe" exit 3 1 >/dev/null 2>&1 || true
python3 "$(dirname "$0")/../launcher/check_event_log.py" "$tmp/events.jsonl" \
  "$(dirname "$0")/../../docs/operations.md" job_start worker_start worker_exit job_end \
  >"$tmp/events" || fail "the static event log does not match docs/operations.md"
grep '"event":"worker_exit"' "$tmp/events.jsonl" | grep '"rank":1,' | grep '"verdict":"failed"' |
  grep -q '"exit_code":3' || { cat "$tmp/events.jsonl"; fail "no failed worker_exit of rank 1"; }
check_error "cohortrun: --event-log: cannot write '$tmp/no/such/dir/log': its directory '$tmp/no/such/dir' cannot be opened: No such file or directory" \
  --event-log "$tmp/no/such/dir/log" -np 1 "$probe" env
# -np=N is --np=N (CLI11 alone would read it as -n with the value 'p=N').
"$cohortrun" -np=2 "$probe" env >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "-np=2 exited $?"; }
"$cohortrun" --help >/dev/null || fail "cohortrun --help exited $?"
check_error "cohortrun: --log-level: 'loud' is not trace, debug, info, warning or error (see cohortrun --help)" \
  --log-level loud -np 1 "$probe" env

# --version (and -v, as horovodrun has it) and --check-build print and exit 0, with no program.
for flag in --version -v; do
  "$cohortrun" "$flag" >"$tmp/out" 2>&1 || fail "cohortrun $flag exited $?"
  grep -qxE 'cohortrun \(Cohort\) [0-9]+\.[0-9]+\.[0-9]+' "$tmp/out" || { cat "$tmp/out"; fail "$flag"; }
done
"$cohortrun" --check-build >"$tmp/out" 2>&1 || fail "cohortrun --check-build exited $?"
for line in "Available tensor operations:" "    [X] Gloo (CPU)" "    [X] MPI (CPU)" \
  "    [X] shared memory (CPU, ranks of one host)"; do
  expect_line "$tmp/out" "$line"
done
grep -qE '^    \[[X ]\] NCCL \(CUDA\)$' "$tmp/out" || { cat "$tmp/out"; fail "no NCCL line"; }
grep -qE '^    \[[X ]\] staged copies \(CUDA, over the CPU operations\)$' "$tmp/out" || { cat "$tmp/out"; fail "no staged line"; }
grep -qE '^    \[[X ]\] Python package \(import cohort.torch\)$' "$tmp/out" || fail "no Python line"

# --log-level reaches the workers as COHORT_LOG_LEVEL, and cohortrun logs at that level itself.
"$cohortrun" --log-level debug -np 2 /usr/bin/env >"$tmp/out" 2>"$tmp/err"
expect_line "$tmp/out" "[0] COHORT_LOG_LEVEL=debug"
expect_line "$tmp/out" "[1] COHORT_LOG_LEVEL=debug"
grep -q '^\[cohortrun\] cohort INFO: ' "$tmp/err" || { cat "$tmp/err"; fail "no info line at debug"; }
echo "cohortrun end-to-end: all checks passed"
