#!/usr/bin/env bash
# Draws allreduce busbw against message size for Cohort, raw Gloo and raw Open MPI (gnuplot, SVG).
#
#   scripts/plot-busbw.sh --run BUILD_DIR OUT.svg      run allreduce_bench (2 ranks) under mpirun
#                                                      with COHORT_CPU_OPERATIONS=gloo (Cohort over
#                                                      shared memory, raw Gloo and raw Open MPI in
#                                                      one run), keep its output beside OUT.svg
#                                                      (.txt) and plot it
#   scripts/plot-busbw.sh --one-run BENCH.txt OUT.svg  plot such a saved output
#   scripts/plot-busbw.sh --bench GLOO.txt MPI.txt OUT.svg   plot saved outputs of the first version
#                                                      (cohortrun over Gloo, mpirun over Open MPI)
#   scripts/plot-busbw.sh --doc docs/benchmarks.md OUT.svg   plot the first version's 2-rank tables
#
# A raw Gloo curve is the fastest raw Gloo algorithm at each size.
# Needs gnuplot (gnuplot-nox, installed by scripts/install-deps.sh).
set -euo pipefail

usage() {
  sed -n '4,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# allreduce_bench output → "bytes cohort_busbw raw_busbw" lines. A row is "N UNIT cohort_us algbw
# busbw best_raw_us best_raw_busbw [raw busbw...] ratio"; comments and the header are skipped.
bench_to_data() {
  awk '
    BEGIN { m["B"] = 1; m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824 }
    $1 ~ /^[0-9.]+$/ && ($2 in m) { printf "%.0f %s %s\n", $1 * m[$2], $5, $7 }
  ' "$1"
}

# The markdown table under the first heading of FILE that contains TITLE → the same three columns.
# Columns are found by their header: "size", "Cohort busbw", and "raw busbw" or else "best raw µs"
# (converted to busbw for 2 ranks, where busbw = algbw).
doc_to_data() {
  awk -v title="$2" '
    BEGIN { m["B"] = 1; m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824 }
    /^#/ { in_section = index($0, title) > 0; header = 0; next }
    !in_section || !/^\|/ { next }
    !header {
      n = split($0, h, "|")
      for (i = 1; i <= n; i++) {
        gsub(/^ +| +$/, "", h[i])
        if (h[i] == "size") c_size = i
        if (h[i] == "Cohort busbw") c_cohort = i
        if (h[i] == "raw busbw") c_raw = i
        if (h[i] == "best raw µs") c_raw_us = i
      }
      header = 1
      next
    }
    /^\|---/ { next }
    {
      split($0, f, "|")
      split(f[c_size], s, " ")
      if (!(s[2] in m)) next
      bytes = s[1] * m[s[2]]
      raw = c_raw ? f[c_raw] + 0 : bytes / (f[c_raw_us] * 1e3)
      printf "%.0f %s %.3f\n", bytes, f[c_cohort] + 0, raw
    }
  ' "$1"
}

# A one-run output (raw columns [0]-[2] Gloo, [3] MPI_Allreduce) → "bytes cohort gloo mpi" lines,
# the Gloo column being its fastest algorithm at that size.
one_run_to_data() {
  awk '
    BEGIN { m["B"] = 1; m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824 }
    $1 ~ /^[0-9.]+$/ && ($2 in m) {
      gloo = 0
      for (i = 8; i <= 10; i++) if ($i != "-" && $i + 0 > gloo) gloo = $i + 0
      printf "%.0f %s %s %s\n", $1 * m[$2], $5, gloo, $11
    }
  ' "$1"
}

need_gnuplot() {
  command -v gnuplot >/dev/null || { echo "plot-busbw: gnuplot not found (scripts/install-deps.sh)" >&2; exit 1; }
}

# The gnuplot commands every plot shares: axes OUT.svg TITLE SUBTITLE
axes() {
  cat <<EOF
set terminal svg size 800,480 dynamic font 'sans,12'
set output '$1'
set title "$2\n{/*0.8 $3}"
set xlabel 'message size'
set ylabel 'busbw (GB/s)'
set logscale x 2
set xtics ('8 B' 8, '64 B' 64, '512 B' 512, '4 KiB' 4096, '32 KiB' 32768, '256 KiB' 262144, \
           '2 MiB' 2097152, '16 MiB' 16777216, '128 MiB' 134217728)
set grid
set key left top
EOF
}

plot_one_run() {  # plot_one_run DATA OUT.svg SUBTITLE
  need_gnuplot
  [[ -s $1 ]] || { echo "plot-busbw: no rows of allreduce figures found" >&2; exit 1; }
  {
    axes "$2" "Allreduce, float32 sum, 2 ranks on one host: bus bandwidth" "$3"
    cat <<EOF
plot '$1' using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#1f77b4' title 'Cohort (shared memory)', \
     '$1' using 1:3 with linespoints pt 6 ps 0.6 lw 1 dt 2 lc rgb '#2ca02c' title 'raw Gloo (best algorithm)', \
     '$1' using 1:4 with linespoints pt 6 ps 0.6 lw 1 dt 2 lc rgb '#d62728' title 'raw Open MPI (MPI\_Allreduce)'
EOF
  } | gnuplot
  echo "plot-busbw: wrote $2"
}

plot() {  # plot GLOO.dat MPI.dat OUT.svg SUBTITLE
  need_gnuplot
  for f in "$1" "$2"; do
    [[ -s $f ]] || { echo "plot-busbw: no rows of allreduce figures found for $f" >&2; exit 1; }
  done
  {
    axes "$3" "Allreduce, float32 sum, 2 ranks: bus bandwidth" "$4"
    cat <<EOF
plot '$1' using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#1f77b4' title 'Cohort over Gloo (cohortrun)', \
     '$1' using 1:3 with linespoints pt 6 ps 0.6 lw 1 dt 2 lc rgb '#1f77b4' title 'raw Gloo (best algorithm)', \
     '$2' using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#d62728' title 'Cohort over Open MPI (mpirun)', \
     '$2' using 1:3 with linespoints pt 6 ps 0.6 lw 1 dt 2 lc rgb '#d62728' title 'raw Open MPI (MPI\_Allreduce)'
EOF
  } | gnuplot
  echo "plot-busbw: wrote $3"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case ${1:-} in
--run)
  [[ $# -eq 3 ]] || usage
  build=$2 out=$3
  COHORT_CPU_OPERATIONS=gloo mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x COHORT_CPU_OPERATIONS "$build/bin/allreduce_bench" --trials 5 | tee "${out%.svg}.txt"
  one_run_to_data "${out%.svg}.txt" >"$tmp/one.dat"
  plot_one_run "$tmp/one.dat" "$out" "allreduce\\\\_bench --trials 5 under mpirun, $(date +%F)"
  ;;
--one-run)
  [[ $# -eq 3 ]] || usage
  one_run_to_data "$2" >"$tmp/one.dat"
  plot_one_run "$tmp/one.dat" "$3" "from $(basename "$2")"
  ;;
--bench)
  [[ $# -eq 4 ]] || usage
  bench_to_data "$2" >"$tmp/gloo.dat"
  bench_to_data "$3" >"$tmp/mpi.dat"
  plot "$tmp/gloo.dat" "$tmp/mpi.dat" "$4" "from $(basename "$2") and $(basename "$3")"
  ;;
--doc)
  [[ $# -eq 3 ]] || usage
  doc_to_data "$2" "2 ranks, Gloo" >"$tmp/gloo.dat"
  doc_to_data "$2" "2 ranks, MPI" >"$tmp/mpi.dat"
  plot "$tmp/gloo.dat" "$tmp/mpi.dat" "$3" "figures recorded in docs/benchmarks.md (Release build, 2-vCPU VM)"
  ;;
*)
  usage
  ;;
esac
