#!/bin/bash
# GPU benchmark: one-rank NCCL allreduce latency at the ops level and through the engine,
# 8 B to 64 MiB. A world of one moves nothing between GPUs: the times are Cohort's (and
# NCCL's launch) overhead.
#   bench/gpu/nccl_latency.sh BUILD_DIR OUT_DIR [--quick]
# Prints a markdown table on stdout; logs go to OUT_DIR. Exits 77 without a usable GPU.
# needs: nccl_latency_bench cohortrun
set -u
build=${1:?usage: nccl_latency.sh BUILD_DIR OUT_DIR [--quick]}
out=${2:?usage: nccl_latency.sh BUILD_DIR OUT_DIR [--quick]}
quick=${3:-}
bench=$build/bin/nccl_latency_bench
# A build without NCCL has no such program (bench/CMakeLists.txt): nothing to measure.
[[ -x $bench ]] || { echo "skipped: $bench was not built (a build without NCCL)"; exit 77; }
"$bench" --probe || exit $?
mkdir -p "$out"
cmd="COHORT_DEVICE_OPERATIONS=nccl $bench $quick"
echo "## NCCL allreduce latency, a world of one (framework overhead; float32 sum)"
echo
echo "\`$cmd\`"
echo
echo "| ranks | size | ops level µs | engine µs | engine − ops µs | algbw GB/s (engine) | busbw GB/s |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
env COHORT_DEVICE_OPERATIONS=nccl timeout 120 "$bench" $quick 2>"$out/nccl_latency.log"
status=$?
[ $status -eq 0 ] || { echo; echo "**failed (exit $status)**:"; tail -5 "$out/nccl_latency.log" | sed 's/^/    /'; }
echo
echo "One rank: NCCL moves no data, so busbw is 0 (nccl-tests: algbw × 2(n−1)/n) and the times are"
echo "the cost of a launch, Cohort's bounded wait and (engine) negotiation and queueing."
exit $status
