#!/usr/bin/env bash
# Runs Cohort and the peers installed by bench/peers/install.sh through the same workloads on this
# machine, trials interleaved (trial → ranks → system), and writes per workload a markdown table
# and a plot under OUT; a full run also regenerates the measured section of docs/comparison.md.
#
#   bench/peers/run.sh BUILD_DIR [--quick] [--workloads allreduce,...] [--systems cohort,cohort2,...]
#                      [--np 2,4] [--trials 3] [--out DIR] [--doc FILE|--no-doc]
#
#   --quick    tiny sizes, few iterations, one trial, 2 ranks, no doc update (the ctest smoke test)
#   --out      default BUILD_DIR/peers; holds results.txt (RESULT lines), logs/, versions.txt,
#              <workload>.md and <workload>.svg
# Environment: PEERS_DIR as for install.sh; COHORT_PEERS_RUN_TIMEOUT (s per run, default 900).
# Workloads plug in as workload_<name> functions; systems as launch_<system> NP SCRIPT ARGS....
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
usage() { sed -n '6,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

build=${1:-}; [ -n "$build" ] && [ "${build#-}" = "$build" ] || usage; shift
build=$(cd "$build" && pwd) || exit 2
quick=0 workloads=allreduce,step,commit,recovery systems=cohort,cohort2,horovod,torch,torchft nps=2,4 trials=3 out='' doc=default
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1; shift ;;
    --workloads|--systems|--np|--trials|--out|--doc)
      [ $# -ge 2 ] || usage
      case $1 in --workloads) workloads=$2 ;; --systems) systems=$2 ;; --np) nps=$2 ;;
        --trials) trials=$2 ;; --out) out=$2 ;; --doc) doc=$2 ;; esac
      shift 2 ;;
    --no-doc) doc=; shift ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ $quick = 1 ] && { trials=1; nps=2; }
[ "$doc" = default ] && { [ $quick = 1 ] && doc= || doc=$repo/docs/comparison.md; }
out=${out:-$build/peers}
source "$here/lib.sh"
run_timeout=${COHORT_PEERS_RUN_TIMEOUT:-900}
export GLOO_SOCKET_IFNAME=lo PYTHONUNBUFFERED=1

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- Systems: availability (a reason on stdout when missing) and launchers -----------------------
missing_reason() {
  case $1 in
    cohort) [ -x "$build/bin/cohortrun" ] && [ -d "$build/python/cohort" ] ||
      echo "not built: $build/bin/cohortrun or $build/python/cohort is missing" ;;
    cohort2)
      missing_reason torch | sed 's/^/torch 2 venv: /'; [ -f "$PEERS_DIR/torch2.ok" ] || return 0
      install_cohort2 ;;
    horovod|torch|torchft)
      local v; v=$(peer_venv "$1")
      if [ -f "$PEERS_DIR/$v.ok" ]; then return 0; fi
      if [ -f "$PEERS_DIR/$v.failed" ]; then echo "could not be installed: $(head -n 1 "$PEERS_DIR/$v.failed")"
      else echo "not installed: run bench/peers/install.sh (looked in $PEERS_DIR)"; fi ;;
    *) echo "unknown system" ;;
  esac
}

launch_cohort() {
  local np=$1 script=$here/$2; shift 2
  PYTHONPATH=$build/python:$here timeout "$run_timeout" "$build/bin/cohortrun" -np "$np" \
    /usr/bin/python3 "$script" "$@" --system cohort
}
# install_cohort2: this checkout pip-installed into the torch 2 venv (incremental: a build folder
# of its own under PEERS_DIR, and ccache); prints the reason when it fails.
install_cohort2() {
  local venv=$PEERS_DIR/torch2 log=$out/logs/cohort2-install.log
  echo "run.sh: pip install of this checkout into $venv (log: $log)" >&2
  exec 8> "$PEERS_DIR/cohort2.lock"  # one install at a time into the shared venv and build folder
  flock --timeout 1200 8 || { echo "timed out waiting for $PEERS_DIR/cohort2.lock"; return 0; }
  source "$repo/scripts/ccache-env.sh"
  env -u PYTHONPATH "$venv/bin/pip" install --no-build-isolation \
    --config-settings=build-dir="$PEERS_DIR/cohort2-build" "$repo" > "$log" 2>&1 ||
    echo "pip install of this checkout into $venv failed (log: $log)"
}
launch_cohort2() {
  local np=$1 script=$here/$2 venv=$PEERS_DIR/torch2; shift 2
  PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/cohortrun" -np "$np" \
    "$venv/bin/python" "$script" "$@" --system cohort2
}
launch_horovod() {
  local np=$1 script=$here/$2 venv=$PEERS_DIR/horovod; shift 2
  PATH=$venv/bin:$PATH PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/horovodrun" --gloo \
    -np "$np" -H "localhost:$np" "$venv/bin/python" "$script" "$@" --system horovod
}
launch_torch() {
  local np=$1 script=$here/$2 venv=$PEERS_DIR/torch2; shift 2
  PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/torchrun" --standalone --nproc-per-node "$np" \
    "$script" "$@" --system torch
}
# TorchFT: a Lighthouse, then one replica group per rank, each a torchrun of one process.
# with_lighthouse NP MIN_REPLICAS LOG GROUP ARGS...: a TorchFT Lighthouse on a free port (log in LOG)
# that forms a quorum of at least MIN_REPLICAS groups, and `GROUP I LPORT ARGS...` for each of the NP
# replica groups, in parallel; returns a failing group's status, after stopping the Lighthouse.
with_lighthouse() {
  local np=$1 min=$2 log=$3 group=$4 lport lighthouse pids=() rc=0 i; shift 4
  lport=$(free_port)
  "$PEERS_DIR/torch2/bin/torchft_lighthouse" --min_replicas "$min" --quorum_tick_ms 100 \
    --join_timeout_ms 10000 --bind "[::]:$lport" > "$log" 2>&1 &
  lighthouse=$!
  for ((i = 0; i < np; i++)); do
    "$group" "$i" "$lport" "$@" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  kill "$lighthouse" 2> /dev/null; wait "$lighthouse" 2> /dev/null
  return $rc
}

# torchft_group I LPORT NP SCRIPT ARGS...: replica group I of NP, one process under torchrun.
torchft_group() {
  local i=$1 lport=$2 np=$3 script=$4; shift 4
  REPLICA_GROUP_ID=$i NUM_REPLICA_GROUPS=$np TORCHFT_LIGHTHOUSE=http://localhost:$lport \
    PYTHONPATH=$here timeout "$run_timeout" "$PEERS_DIR/torch2/bin/torchrun" --nproc-per-node 1 \
    --master-port "$(free_port)" "$script" "$@" --system torchft
}

launch_torchft() {
  local np=$1 script=$here/$2; shift 2
  with_lighthouse "$np" "$np" "$out/logs/lighthouse.log" torchft_group "$np" "$script" "$@"
}

# run_one WORKLOAD SYSTEM NP TRIAL SCRIPT ARGS...: one run; its RESULT lines go to results.txt, a
# failure becomes a FAILED line (never a silent gap). A workload that runs several variants at the
# same ranks sets run_tag (e.g. the model) so that their logs keep apart.
run_one() {
  local workload=$1 system=$2 np=$3 trial=$4; shift 4
  local log=$out/logs/$workload${run_tag:+-$run_tag}-$system-np$np-t$trial.log rc
  echo "run.sh: $workload $system np=$np trial $trial" >&2
  "launch_$system" "$np" "$@" --trial "$trial" > "$log" 2>&1; rc=$?
  # A RESULT line that another process's output interrupted still counts: each RESULT starts a line.
  sed 's/\(.\)RESULT /\1\nRESULT /g' "$log" | grep -ho 'RESULT .*' >> "$out/results.txt"
  [ $rc = 0 ] || echo "FAILED workload=$workload system=$system np=$np trial=$trial rc=$rc log=$log" |
    tee -a "$out/results.txt" >&2
}

# each_run WORKLOAD ARGS...: every available system's program for WORKLOAD at every --np, trials
# interleaved (trial → ranks → system), so that every system sees the same machine noise.
each_run() {
  local workload=$1 trial np system; shift
  for trial in $(seq "$trials"); do
    for np in ${nps//,/ }; do
      for system in "${available[@]}"; do
        run_one "$workload" "$system" "$np" "$trial" "$(harness "$workload" "$system")" "$@"
      done
    done
  done
}

# --- Workloads: each folder <workload>/ holds workload.sh (its workload_<name> function, run with
# quick, trials, nps and available set), report.py and one program per system ------------------
# harness WORKLOAD SYSTEM: the program SYSTEM runs for WORKLOAD, relative to bench/peers. Cohort on
# torch 2 (cohort2) runs Cohort's program.
harness() { echo "$1/$1_${2%2}.py"; }
known_workloads=()
for file in "$here"/*/workload.sh; do
  source "$file"
  known_workloads+=("$(basename "$(dirname "$file")")")
done

# --- Versions, runs, reports ---------------------------------------------------------------------
# Bad arguments are refused before anything under OUT is touched.
for workload in ${workloads//,/ }; do
  declare -F "workload_$workload" > /dev/null ||
    { echo "run.sh: unknown workload '$workload' (known: ${known_workloads[*]})" >&2; exit 2; }
done
for system in ${systems//,/ }; do
  declare -F "launch_$system" > /dev/null ||
    { echo "run.sh: unknown system '$system' (known: cohort, cohort2, horovod, torch, torchft)" >&2; exit 2; }
done
[[ $trials =~ ^[1-9][0-9]*$ && $nps =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "run.sh: --trials takes a count and --np a list of counts (e.g. 2,4)" >&2; exit 2; }
available=()
mkdir -p "$out/logs"
: > "$out/results.txt"
{
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg) at start"
  echo "cohort: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)'), torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>&1) (Debian)"
  cat "$PEERS_DIR"/*.ok 2>/dev/null
} > "$out/versions.txt"
: > "$out/missing.txt"
for system in ${systems//,/ }; do
  reason=$(missing_reason "$system")
  if [ -z "$reason" ]; then available+=("$system")
  else echo "$system: $reason" | tee -a "$out/missing.txt" >&2; fi
done
[ ${#available[@]} -gt 0 ] || { echo "run.sh: no system can run" >&2; exit 1; }

status=0
for workload in ${workloads//,/ }; do
  "workload_$workload"
  /usr/bin/python3 "$here/report.py" --workload "$workload" --out "$out" --systems "$systems" \
    --command "bench/peers/run.sh BUILD_DIR --workloads $workload --np $nps --trials $trials" \
    ${doc:+--doc "$doc"} || status=1
done
grep -q '^FAILED' "$out/results.txt" && status=1
exit $status
