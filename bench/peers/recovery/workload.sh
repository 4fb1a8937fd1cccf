# shellcheck shell=bash
# The recovery workload (issue 28, workloads 3 and 4), sourced by bench/peers/run.sh: a 4-worker
# job of the digits CNN (recovery/common.py) where one worker SIGKILLs itself mid-epoch (kind
# kill) or one leaves cleanly (kind remove), each system recovering with its own elastic
# mechanism; analyze.py turns each run's log into a RESULT line (or a FAILED line and a .reason
# file). --quick: Cohort's kill run at 2 ranks only, a few seconds of training.
recovery_args=()

# The discovery script of an elastic job: it prints WORK/hosts, which starts as localhost:NP.
recovery_discovery() {
  echo "localhost:$2" > "$1/hosts"
  printf '#!/bin/sh\nexec cat %s/hosts\n' "$1" > "$1/discover.sh"
  chmod +x "$1/discover.sh"
}

# cohortrun in elastic mode: a killed worker's slot comes back after a 1 s cooldown
# (--blacklist-cooldown-range 1 1), which is how a failed worker is replaced on the same host.
recovery_cohortrun() {
  local cohortrun=$1 python=$2 pythonpath=$3 system=$4 np=$5 work=$6; shift 6
  recovery_discovery "$work" "$np"
  PYTHONPATH=$pythonpath timeout "$run_timeout" "$cohortrun" \
    --host-discovery-script "$work/discover.sh" --discovery-interval 0.2 \
    --min-np $((np > 2 ? np / 2 : 1)) --max-np "$np" --blacklist-cooldown-range 1 1 \
    "$python" "$here/recovery/recovery_cohort.py" --job-size "$np" --work "$work" "$@" \
    --system "$system"
}
recovery_launch_cohort() {
  recovery_cohortrun "$build/bin/cohortrun" /usr/bin/python3 "$build/python:$here" cohort "$@"
}
recovery_launch_cohort2() {
  recovery_cohortrun "$PEERS_DIR/torch2/bin/cohortrun" "$PEERS_DIR/torch2/bin/python" "$here" \
    cohort2 "$@"
}

# recovery_run SYSTEM NP TRIAL KIND: one run and its analysis.
recovery_run() {
  local system=$1 np=$2 trial=$3 kind=$4 log work rc
  # A healthy run takes well under a minute: a stuck recovery fails in 3 minutes, not in 15.
  local run_timeout=$((run_timeout < 180 ? run_timeout : 180))
  log=$out/logs/recovery-$system-$kind-np$np-t$trial.log
  work=$(mktemp -d "$out/logs/recovery-work.XXXXXX")
  echo "run.sh: recovery $system $kind np=$np trial $trial" >&2
  "recovery_launch_$system" "$np" "$work" --kind "$kind" --trial "$trial" "${recovery_args[@]}" \
    > "$log" 2>&1
  rc=$?
  rm -rf "$work"
  if /usr/bin/python3 "$here/recovery/analyze.py" "$log" --system "$system" --trial "$trial" \
    --np "$np" --kind "$kind" --rc "$rc" >> "$out/results.txt" 2> "$log.reason"; then
    rm -f "$log.reason"
  else
    echo "FAILED workload=recovery system=$system np=$np trial=$trial rc=$rc kind=$kind log=$log" |
      tee -a "$out/results.txt" >&2
  fi
}

workload_recovery() {
  local trial system kind np=4 kinds=(kill remove) horovod=''
  [[ " ${available[*]} " == *" horovod "* ]] && horovod=1
  if [ "$quick" = 1 ]; then
    np=2 kinds=(kill) recovery_args=(--samples 512 --epochs 16 --step-delay-ms 30)
  fi
  for trial in $(seq "$trials"); do
    for kind in "${kinds[@]}"; do
      for system in "${available[@]}" ${horovod:+horovod_cooldown}; do
        [ "$quick" = 1 ] && [ "$system" != cohort ] && continue
        declare -F "recovery_launch_$system" > /dev/null || continue
        [ "$system:$kind" = torch:remove ] && continue  # n/a (recovery/report.py says why)
        [ "$system:$kind" = horovod_cooldown:remove ] && continue  # a cooldown changes no removal
        recovery_run "$system" "$np" "$trial" "$kind"
      done
    done
  done
}

# torchrun: one node, restart-all (--max-restarts 3), the program resumes from its checkpoint.
recovery_launch_torch() {
  local np=$1 work=$2 venv=$PEERS_DIR/torch2; shift 2
  PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/torchrun" --standalone --nproc-per-node "$np" \
    --max-restarts 3 "$here/recovery/recovery_torch.py" --job-size "$np" --work "$work" "$@" \
    --system torch
}

# TorchFT: a Lighthouse (quorum of at least half the groups), one replica group of one process
# per worker; a group that fails is started again once (the replacement), as a cluster manager
# would, and heals from the others.
recovery_torchft_group() {
  local i=$1 lport=$2 np=$3 work=$4 try; shift 4
  for try in first replacement; do
    torchft_group "$i" "$lport" "$np" "$here/recovery/recovery_torchft.py" --job-size "$np" \
      --work "$work" "$@" && return 0
    echo "recovery: replica group $i ($try) failed" >&2
  done
  return 1
}
recovery_launch_torchft() {
  local np=$1 work=$2; shift 2
  with_lighthouse "$np" $((np > 2 ? np / 2 : 1)) "$work/lighthouse.log" recovery_torchft_group \
    "$np" "$work" "$@"
}

# horovodrun elastic with the same discovery script, by default (Horovod blacklists a host whose
# worker failed, for good), and as horovod_cooldown with --blacklist-cooldown-range 1 1 (the host
# comes back after 1 s).
recovery_horovodrun() {
  local system=$1 np=$2 work=$3 venv=$PEERS_DIR/horovod cooldown=(); shift 3
  [ "$system" = horovod_cooldown ] && cooldown=(--blacklist-cooldown-range 1 1)
  recovery_discovery "$work" "$np"
  PATH=$venv/bin:$PATH PYTHONPATH=$here timeout "$run_timeout" "$venv/bin/horovodrun" --gloo \
    --network-interface lo -np "$np" --min-np $((np > 2 ? np / 2 : 1)) --max-np "$np" \
    --host-discovery-script "$work/discover.sh" "${cooldown[@]}" "$venv/bin/python" \
    "$here/recovery/recovery_horovod.py" --job-size "$np" --work "$work" "$@" --system "$system"
}
recovery_launch_horovod() { recovery_horovodrun horovod "$@"; }
recovery_launch_horovod_cooldown() { recovery_horovodrun horovod_cooldown "$@"; }
