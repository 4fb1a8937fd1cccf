# shellcheck shell=bash
# The step workload (issue 28, workload 1), sourced by bench/peers/run.sh: the time of a training
# step of the digits CNN, a 25M-parameter MLP and a 50M-parameter transformer (step/common.py),
# each system through its own data-parallel wrapper, trials interleaved.
workload_step() {
  local args=() trial np system
  [ "$quick" = 1 ] && args=(--models digits,mlp25m --warmup 0 --steps 1)
  for trial in $(seq "$trials"); do
    for np in ${nps//,/ }; do
      for system in "${available[@]}"; do
        run_one step "$system" "$np" "$trial" "$(harness step "$system")" "${args[@]}"
      done
    done
  done
}
