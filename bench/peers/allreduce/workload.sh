# shellcheck shell=bash
# The allreduce workload (issue 28, workload 2), sourced by bench/peers/run.sh: every system's own
# allreduce on float32 torch tensors, 8 B … 256 MiB (allreduce/common.py), trials interleaved.
workload_allreduce() {
  local args=()
  [ "$quick" = 1 ] && args=(--max-bytes 4096 --warmup 1 --min-iters 2 --max-iters 5)
  each_run allreduce "${args[@]}"
}
