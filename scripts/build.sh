#!/usr/bin/env bash
# Configures and builds Cohort. Usage: scripts/build.sh BUILD_DIR [extra cmake arguments...]
#
# Uses ccache where it is installed (scripts/install-deps.sh installs it): the builds of one CI run
# share their untouched objects, and a later run on the same machine (CI builds a fresh clone each
# time) reuses the earlier one's: the cache lives outside the checkout, beside the torch 2.x venv
# (scripts/torch2-env.sh). CCACHE_BASEDIR makes the cached paths relative, so any clone hits them.
set -euo pipefail
build_dir=${1:?usage: scripts/build.sh BUILD_DIR [cmake args...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$build_dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
