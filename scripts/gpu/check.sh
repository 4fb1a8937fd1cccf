#!/usr/bin/env bash
# The device check (issue 30, scripts/gpu/README.md): run on a lent GPU machine, as root, from the
# repository root, in one go. Builds Cohort with CUDA and NCCL (NCCL from the nvidia-nccl-cu13
# wheel) against the image's torch and python3, runs every test labelled `gpu` (ctest -L gpu) and
# every bench/gpu/*.sh, and writes $OUT/report.md and $OUT/logs.tar.gz. Bounded: a global deadline
# (default 510 s); each step runs under `timeout` with what is left, and the report is written
# whatever happens (an EXIT trap), listing what was not reached. The report is printed at the end.
#
#   bash scripts/gpu/check.sh [--deadline-s N] [--out DIR] [--build-dir DIR] [--deps DIR]
#                             [--python PY] [--commit SHA] [--stop-after STEP] [--rehearse]
#                             [--tests-regex RE] [--benches a,b|none] [--ctest-jobs N]
#                             [-D<cmake definition>...]
# --tests-regex RE: only the gpu tests whose name matches RE (ctest -R); --benches: only these
#   bench/gpu scripts (names without .sh), or none; --ctest-jobs: tests run at once (default 8 on
#   the device, 2 in a rehearsal). For a second, shorter call that reruns what failed.
# --rehearse: without a GPU (here, CI): Debian's torch (/usr/bin/python3), no NCCL or CUDA, and
#   every gpu test and bench must skip (exit 77); used by the ctest test gpu_check.rehearsal.
# --stop-after STEP: stop after configure or build_tests (checks the configure of device mode on a
#   machine without a GPU: --python <a venv with torch cu13 and nvidia-nccl-cu13>).
# Exit: 0 every step passed; 1 a step failed; 3 the deadline stopped it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

mode=device deadline_s=510 out=${OUT:-} build='' deps=$root/.gpu-deps python='' commit='' stop_after=''
tests_regex='' ctest_jobs=''
export COHORT_CHECK_BENCHES=''
extra_cmake=()
while (($#)); do
  case $1 in
    --rehearse) mode=rehearse ;;
    --deadline-s) deadline_s=$2; shift ;;
    --out) out=$2; shift ;;
    --build-dir) build=$2; shift ;;
    --deps) deps=$2; shift ;;
    --python) python=$2; shift ;;
    --commit) commit=$2; shift ;;
    --stop-after) stop_after=$2; shift ;;
    --tests-regex) tests_regex=$2; shift ;;
    --benches) COHORT_CHECK_BENCHES=$2; shift ;;
    --ctest-jobs) ctest_jobs=$2; shift ;;
    -D*) extra_cmake+=("$1") ;;
    *) echo "check.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
deadline=$((start + deadline_s))
out=${out:-$root/gpu-check-out}
if [[ $mode == device ]]; then
  build=${build:-$root/build-gpu}
  # The image's torch lives in /opt/torch/.venv, whose bin/ also holds cmake and ninja: used
  # when the python3 on PATH has no torch, and its bin/ put on PATH when cmake or ninja is missing.
  if [[ -z $python ]]; then
    python=$(command -v python3)
    "$python" -c 'import torch' 2>/dev/null || python=/opt/torch/.venv/bin/python3
  fi
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
    PATH=$(dirname "$python"):$PATH
  fi
else
  build=${build:-$root/build-gpu-rehearsal}
  python=${python:-/usr/bin/python3}
fi
work=$build/gpu-check            # logs and bench outputs; tarred into $out at the end
mkdir -p "$out" "$build"
build=$(cd "$build" && pwd)
rm -rf "$work"
mkdir -p "$work/logs" "$work/bench"
steps_file=$work/steps.tsv        # step, status, seconds, note: read by report.py
: >"$steps_file"
export mode root build deps python commit work here steps_file
export COHORT_CHECK_DEADLINE_EPOCH=$deadline

say() { echo "[check $(($(date +%s) - start))s] $*"; }
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$steps_file"; }
left() { echo $((deadline - $(date +%s))); }
reserve=15                        # seconds kept for the report and the tarball
deadline_hit=0
failed=0

# run_step NAME MAX_S COMMAND...: runs COMMAND under `timeout` with what is left (at most MAX_S),
# its output in logs/NAME.log, and records the result. Returns the command's status.
run_step() {
  local name=$1 max=$2; shift 2
  local budget=$(($(left) - reserve))
  ((budget > max)) && budget=$max
  if ((budget < 5)); then
    record "$name" "not reached" 0 "deadline (${deadline_s} s) reached before it"
    deadline_hit=1
    return 124
  fi
  say "$name (up to ${budget} s)"
  local t0 rc; t0=$(date +%s)
  # COHORT_CHECK_STALL_STEP=NAME (test/gpu: the deadline test) makes that step hang instead.
  [[ ${COHORT_CHECK_STALL_STEP:-} == "$name" ]] && set -- sleep 3600
  timeout --kill-after=5 "$budget" "$@" >"$work/logs/$name.log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0))
  if ((rc == 0)); then
    record "$name" passed "$took" ""
  elif ((rc == 124 || rc == 137)); then
    record "$name" "timed out" "$took" "stopped after ${budget} s (deadline or step limit)"
    deadline_hit=1
  else
    record "$name" failed "$took" "exit $rc; see logs/$name.log"
    failed=1
  fi
  say "$name: exit $rc after ${took} s"
  return "$rc"
}

finish() {
  local rc=$?
  trap - EXIT INT TERM
  for step in environment configure build_tests tests build_bench bench; do
    grep -q "^$step	" "$steps_file" || record "$step" "not reached" 0 ""
  done
  export COHORT_CHECK_ELAPSED=$(($(date +%s) - start)) COHORT_CHECK_DEADLINE=$deadline_s
  "$python" "$here/report.py" "$work" >"$out/report.md" 2>"$work/logs/report.log" ||
    python3 "$here/report.py" "$work" >"$out/report.md" 2>>"$work/logs/report.log" || {
      echo "# Cohort device check: report.py failed"; cat "$steps_file" "$work/logs/report.log"
    } >"$out/report.md"
  cp "$build/Testing/Temporary/LastTest.log" "$work/logs/" 2>/dev/null
  # At most 16 MiB comes back per file: the logs are cut to their last 2 MiB each.
  find "$work" -name '*.log' -size +2M -exec sh -c 'tail -c 2M "$1" >"$1.t" && mv "$1.t" "$1"' _ {} \;
  tar -czf "$out/logs.tar.gz" -C "$build" gpu-check 2>/dev/null
  cat "$out/report.md"
  echo "check.sh: report in $out/report.md, logs in $out/logs.tar.gz"
  if ((rc == 0 || rc == 1)); then
    ((failed)) && rc=1
    ((deadline_hit)) && rc=3
  fi
  exit "$rc"
}
trap finish EXIT
trap 'echo "check.sh: interrupted" >&2; exit 130' INT TERM

source "$here/check-env.sh"       # environment, deps, cmake arguments (functions below)
run_step environment 30 bash "$here/check-env.sh" describe_environment "$work/environment.md"
setup_deps || failed=1
cmake_args=()
configure_arguments

run_step configure 180 cmake -S "$root" -B "$build" "${cmake_args[@]}" "${extra_cmake[@]}" ||
  exit 1
# A missing piece is reported (the configure row fails) but what was found still runs.
check_configure_log "$work/logs/configure.log" || true
[[ $stop_after == configure ]] && exit 0

jobs=$(nproc)
mapfile -t targets < <("$python" "$here/gpu_targets.py" tests "$build" "$root")
if ((${#targets[@]})); then
  # -k 0: a program that does not build leaves the others to run (its tests then fail, named).
  run_step build_tests 420 cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- -k 0
else
  record build_tests passed 0 "no test labelled gpu needs a build target"
fi
[[ $stop_after == build_tests ]] && exit 0

[[ $mode == device ]] && ctest_jobs=${ctest_jobs:-8}
ctest_args=(--test-dir "$build" -L gpu --output-on-failure --timeout 240 --no-tests=ignore
  -j "${ctest_jobs:-2}")
[[ -n $tests_regex ]] && ctest_args+=(-R "$tests_regex")
# With benchmarks to run, the tests leave them 120 s.
tests_max=400
compgen -G "$root/bench/gpu/*.sh" >/dev/null && tests_max=$(($(left) - reserve - 120))
((tests_max < 60)) && tests_max=60
run_step tests "$tests_max" ctest "${ctest_args[@]}"
"$python" "$here/gpu_targets.py" verdict "$build" "$work/logs/tests.log" "$mode" ||
  { record verdict failed 0 "see the Tests section"; failed=1; }

mapfile -t targets < <("$python" "$here/gpu_targets.py" bench "$build" "$root")
if ((${#targets[@]})); then
  run_step build_bench 300 cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- -k 0
else
  record build_bench passed 0 "no bench/gpu script needs a build target"
fi
run_step bench 400 bash "$here/check-env.sh" run_benches "$root" "$build" "$work/bench" "$mode" || true
exit 0
