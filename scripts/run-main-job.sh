#!/usr/bin/env bash
# The main job: install, build, and run a 4-worker cohortrun job on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_TESTS=OFF
# Up to 2 MiB: with 4 workers on 2 cores, larger sizes bring in the new-API ring baseline,
# which takes seconds per operation when oversubscribed (docs/benchmarks.md).
build/bin/cohortrun -np 4 build/bin/allreduce_bench --step 4 --trials 3 --max-bytes 2097152 "$@"
