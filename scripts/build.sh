#!/usr/bin/env bash
# Configures and builds Cohort. Usage: scripts/build.sh BUILD_DIR [extra cmake arguments...]
#
# Uses ccache where it is installed (scripts/ccache-env.sh).
set -euo pipefail
build_dir=${1:?usage: scripts/build.sh BUILD_DIR [cmake args...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/ccache-env.sh"
cmake -S "$root" -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
