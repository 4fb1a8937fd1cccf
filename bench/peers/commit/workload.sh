# shellcheck shell=bash
# The commit workload (issue 28, workload 5), sourced by bench/peers/run.sh: the cost of keeping
# the state each system needs to recover (commit/common.py), trials interleaved. mlp25m runs at
# every --np; mlp500m (3.8 GB of state per rank, doubled by a copy) at 1 rank only, TorchFT at 2
# replica groups (a transfer needs a source and a receiver). --quick: mlp25m, 2 commits.
workload_commit() {
  local trial np system run_tag
  for trial in $(seq "$trials"); do
    for np in ${nps//,/ }; do
      for system in "${available[@]}"; do
        run_tag=mlp25m run_one commit "$system" "$np" "$trial" "$(harness commit "$system")" \
          --model mlp25m --commits "$([ "$quick" = 1 ] && echo 2 || echo 5)"
      done
    done
  done
  [ "$quick" = 1 ] && return
  for trial in $(seq "$trials"); do
    for system in "${available[@]}"; do
      np=1; [ "$system" = torchft ] && np=2
      run_tag=mlp500m run_one commit "$system" "$np" "$trial" "$(harness commit "$system")" \
        --model mlp500m --commits 3
    done
  done
}
