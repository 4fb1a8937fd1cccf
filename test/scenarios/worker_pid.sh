# Shared by the scenario scripts: the pid of one worker of this test's job. The sourcing script
# sets $worker (the trainer program) and $tmp (the test's directory, which the trainer's arguments
# name), and defines fail.
worker_pid() {  # worker_pid ID: this test's trainer process with COHORT_WORKER_ID=ID
  local p exe
  exe=$(readlink -f "$worker")
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/exe" 2>/dev/null) == "$exe" ]] || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$tmp/" || continue  # another test's
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "COHORT_WORKER_ID=$1" &&
      { echo "${p#/proc/}"; return; }
  done
  fail "no running trainer with worker id $1"
}
