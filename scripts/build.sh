#!/usr/bin/env bash
# Configures and builds Cohort. Usage: scripts/build.sh BUILD_DIR [extra cmake arguments...]
set -euo pipefail
build_dir=${1:?usage: scripts/build.sh BUILD_DIR [cmake args...]}
shift
cmake -S "$(dirname "$0")/.." -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
