# shellcheck shell=bash
# The commit workload (issue 28, workload 5), sourced by bench/peers/run.sh: the cost of keeping
# the state each system needs to recover (commit/common.py), trials interleaved. mlp25m runs at
# every --np, torch's checkpoint with and without fsync. mlp500m (3.8 GB of state per rank, doubled
# by a copy: the machine has 23 GB, shared) runs at 1 rank (TorchFT: 2 replica groups, a source and
# a receiver), in the first trial only and without the clone timing, to keep a full run near 10
# minutes. 3 commits per process; --quick: mlp25m, 2 commits.
workload_commit() {
  local np system commits=3
  [ "$quick" = 1 ] && commits=2
  run_tag=mlp25m each_run commit --model mlp25m --commits "$commits" --fsync
  [ "$quick" = 1 ] && return
  for system in "${available[@]}"; do
    np=1; [ "$system" = torchft ] && np=2
    run_tag=mlp500m run_one commit "$system" "$np" 1 "$(harness commit "$system")" \
      --model mlp500m --commits 3 --no-clone
  done
}
