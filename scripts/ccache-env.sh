# shellcheck shell=bash
# Sourced by every script that builds Cohort (scripts/build.sh, test-torch2.sh, test-pip.sh,
# bench/peers/run.sh): where ccache is installed (scripts/install-deps.sh installs it), makes it
# the compiler launcher of every CMake build configured afterwards, through the environment that
# CMake (>= 3.17) and scikit-build-core read. The cache lives outside the checkout, beside the
# torch 2.x venv (scripts/torch2-env.sh), so the builds of one CI run share their untouched objects
# and a later run on the same machine (CI builds a fresh clone each time) reuses them;
# CCACHE_BASEDIR makes the cached paths relative, so any clone hits them. A variable already set
# by the caller wins.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
fi
