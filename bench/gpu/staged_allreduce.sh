#!/bin/bash
# GPU benchmark: device allreduce through the staged backend, 2 and 4 ranks sharing one GPU,
# 8 B to 256 MiB, against the bound a staged allreduce cannot beat (the pinned D2H + H2D round
# trip plus the host allreduce of the same bytes, both measured in the same run).
#   bench/gpu/staged_allreduce.sh BUILD_DIR OUT_DIR [--quick]
# Prints a markdown table on stdout; logs go to OUT_DIR. Exits 77 without a usable GPU.
# needs: staged_allreduce_bench cohortrun
set -u
build=${1:?usage: staged_allreduce.sh BUILD_DIR OUT_DIR [--quick]}
out=${2:?usage: staged_allreduce.sh BUILD_DIR OUT_DIR [--quick]}
quick=${3:-}
bench=$build/bin/staged_allreduce_bench
# A build without the CUDA toolkit has no such program (bench/CMakeLists.txt): nothing to measure.
[[ -x $bench ]] || { echo "skipped: $bench was not built (a build without the CUDA toolkit)"; exit 77; }
"$bench" --probe || exit $?
mkdir -p "$out"
table=$out/staged_allreduce.rows
rm -f "$table"
echo "## Staged device allreduce against the memcpy + host allreduce bound (float32 sum)"
echo
status=0
for np in 2 4; do
  cmd="COHORT_DEVICE_OPERATIONS=staged $build/bin/cohortrun -np $np $bench --table $table $quick"
  echo "\`$cmd\`"
  echo
  env COHORT_DEVICE_OPERATIONS=staged timeout 120 "$build/bin/cohortrun" -np "$np" \
    "$bench" --table "$table" $quick >"$out/staged_allreduce.np$np.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || {
    status=1
    echo "**np $np failed (exit $rc)**: see staged_allreduce.np$np.log"
    tail -5 "$out/staged_allreduce.np$np.log" | sed 's/^/    /'
    echo
  }
done
echo "| ranks | size | staged µs | algbw GB/s | busbw GB/s | D2H+H2D µs | host allreduce µs | bound µs | staged / bound |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
cat "$table" 2>/dev/null
echo
echo "Times: the slowest rank's mean. bound = D2H+H2D (pinned, every rank at once) + host allreduce;"
echo "a ratio near 1 means staging adds little beyond its copies and the CPU reduction."
exit $status
