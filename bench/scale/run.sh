#!/usr/bin/env bash
# Runs the control-plane simulation benches (coordinator_bench, fanin_bench, rendezvous_bench,
# agent_rounds.sh),
# prints their tables, draws their plots and writes a page of them (bench/scale/report.py).
#
#   bench/scale/run.sh BUILD_DIR            the full run (minutes; run it on a quiet machine):
#                                           tables, plots and the page in BUILD_DIR/scale; it does
#                                           not touch docs/scaling.md (whose sections after part
#                                           1 are analysis written by hand): copy from it
#   bench/scale/run.sh BUILD_DIR --quick    tiny sizes in seconds, tables and plots in
#                                           BUILD_DIR/scale-quick, the page there too; checks that
#                                           every table parses (the bench.scale.quick test)
set -euo pipefail

usage() {
  sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
build=$(cd "$1" && pwd)
quick=0
[[ ${2:-} == --quick ]] && quick=1
[[ $# -le 2 && ( $# -eq 1 || $quick -eq 1 ) ]] || usage
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin

if ((quick)); then
  out=$build/scale-quick
  coordinator=(--max-ranks 16 --tensors 20 --min-seconds 0.001 --max-cycles 3)
  fanin=(--ranks 4 8 --min-seconds 0.05 --procs 2)
  rendezvous=(--workers 4 8 --procs 2 --timeout-s 20)
  agents=(2 4)
  doc=$out/scaling.md
  img=$out
else
  out=$build/scale
  coordinator=()
  fanin=(--ranks 16 64 256 1024 2048 4096 --min-seconds 2)
  rendezvous=(--workers 16 64 256 512 1024 2048 4096 --timeout-s 20)
  agents=(16 32 64 128 256)
  doc=$out/scaling.md
  img=$out
fi
mkdir -p "$out" "$img"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$bin/coordinator_bench" "${coordinator[@]}" | tee "$out/coordinator.txt"
"$bin/fanin_bench" "${fanin[@]}" | tee "$out/fanin.txt"
"$bin/rendezvous_bench" "${rendezvous[@]}" | tee "$out/rendezvous.txt"
"$here/agent_rounds.sh" "$build" "${agents[@]}" | tee "$out/agents.txt"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

args=(--tables "$out" --img "$img" --doc "$doc" --load "$load_before / $load_after"
      --cores "$(nproc)")
((quick)) && args+=(--quick)
python3 "$here/report.py" "${args[@]}"
