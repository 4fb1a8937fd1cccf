#!/usr/bin/env bash
# The elastic training demo (the README's main job): a training program run by cohortrun in
# elastic mode on this machine, while this script plays the cluster:
#   1. starts with host localhost (3 slots): 3 workers;
#   2. adds host 127.0.0.2 (1 slot) to the discovery script's output: the job grows to 4;
#   3. kills one worker with SIGKILL: its slot is retired and 3 train on;
#   4. removes host 127.0.0.2: its worker is told to leave, 2 train on to the end.
# Each step waits (bounded) for the job to train in the previous state (a progress line, which rank
# 0 prints every few steps, at the new world size), so the demo is the same every run.
#
# Usage: examples/elastic_demo.sh [--program PROGRAM] BUILD_DIR [program arguments...]
# PROGRAM (default digits_cnn):
#   digits_cnn       examples/torch/digits_cnn.cc: a libtorch CNN on the digits data set
#   train_digits.py  examples/torch/train_digits.py: the same in Python with cohort.torch
#                    (run by $DEMO_PYTHON, default /usr/bin/python3, with BUILD_DIR/python)
#   elastic_mlp      examples/elastic_mlp.cc: a hand-written MLP on synthetic data
set -euo pipefail
program=digits_cnn
if [[ ${1:-} == --program ]]; then
  program=${2:?--program needs a value}
  shift 2
fi
usage="usage: elastic_demo.sh [--program digits_cnn|train_digits.py|elastic_mlp] BUILD_DIR [args]"
build=${1:?$usage}
shift
examples=$(cd "$(dirname "$0")" && pwd)

# The command each worker runs. The step delays make an epoch last long enough (about a second)
# for the script to act in the middle of training.
case $program in
  digits_cnn)
    [[ -x $build/bin/digits_cnn ]] || {
      echo "demo: $build/bin/digits_cnn is not built: Torch was not found when $build was" \
        "configured (apt-get install libtorch-dev, then configure again)" >&2
      exit 1
    }
    worker=("$build/bin/digits_cnn" --epochs 14 --step-delay-ms 20) ;;
  train_digits.py)
    worker=(env "PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}"
      "${DEMO_PYTHON:-/usr/bin/python3}" "$examples/torch/train_digits.py" --epochs 14
      --step-delay-ms 20) ;;
  elastic_mlp)
    worker=("$build/bin/elastic_mlp" --epochs 12 --step-delay-ms 15) ;;
  *)
    echo "demo: unknown program $program (digits_cnn, train_digits.py or elastic_mlp)" >&2
    exit 2 ;;
esac

work=$(mktemp -d)
job=""
cleanup() {
  if [[ -n $job ]] && kill -0 "$job" 2>/dev/null; then kill -TERM "$job" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

say() { echo "demo: $*"; }
set_hosts() {  # replaced in one rename: a discovery run never sees half a file
  printf '%s\n' "$@" >"$work/hosts.new"
  mv "$work/hosts.new" "$work/hosts"
  say "the discovery script now prints: $*"
}
mark() { seen=$(wc -l <"$work/log"); }  # wait_for looks only at lines after the mark
seen=0
wait_for() {  # wait_for REGEX: a line of the job's output after the mark matches within 60 s
  for _ in $(seq 1200); do
    grep -q -- "$1" < <(tail -n "+$((seen + 1))" "$work/log") && return 0
    kill -0 "$job" 2>/dev/null || { say "the job ended before: $1"; exit 1; }
    sleep 0.05
  done
  say "timed out waiting for: $1"
  exit 1
}

printf '#!/bin/sh\ncat %s/hosts\n' "$work" >"$work/discover.sh"
chmod +x "$work/discover.sh"
set_hosts localhost:3
say "training $program: ${worker[*]} $*"

: >"$work/log"  # there before the first wait_for reads it
"$build/bin/cohortrun" --host-discovery-script "$work/discover.sh" --discovery-interval 0.5 \
  --min-np 2 --max-np 4 "${worker[@]}" "$@" > >(tee "$work/log") 2>&1 &
job=$!

wait_for "epoch 1 done: .*world size 3"
mark
set_hosts localhost:3 127.0.0.2:1
wait_for "epoch [0-9]* step [0-9]*: .*world size 4"

victim=$(grep -o 'training: rank 1 of 4, .*pid [0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$')
say "killing the worker with rank 1 (pid $victim) with SIGKILL"
mark
kill -KILL "$victim"
wait_for "epoch [0-9]* step [0-9]*: .*world size 3"

mark
set_hosts localhost:3
wait_for "epoch [0-9]* step [0-9]*: .*world size 2"

rc=0
wait "$job" || rc=$?
job=""
echo
say "job finished with status $rc"
say "resets: $(grep -c 'round [0-9]* (' "$work/log" | awk '{print $1 - 1}')"
grep -o 'held-out accuracy [0-9.]* (.*' "$work/log" | sed 's/^/demo: /' || true
grep -o 'summary: .*' "$work/log" | sed 's/^/demo: /'
exit "$rc"
