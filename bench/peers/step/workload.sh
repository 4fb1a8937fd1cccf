# shellcheck shell=bash
# The step workload (issue 28, workload 1), sourced by bench/peers/run.sh: the time of a training
# step of the digits CNN, a 25M-parameter MLP and a 50M-parameter transformer (step/common.py),
# each system through its own data-parallel wrapper, trials interleaved.
workload_step() {
  local args=()
  [ "$quick" = 1 ] && args=(--models digits,mlp25m --warmup 0 --steps 1)
  each_run step "${args[@]}"
}
