#!/usr/bin/env bash
# The main job: install, build, and run a 4-worker cohortrun job on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_TESTS=OFF
build/bin/cohortrun -np 4 build/bin/allreduce_bench "$@"
