#!/usr/bin/env bash
# CI stage: the torch adapter's checks (test/torch) and the Python package's tests (test/python)
# against the newest torch 2.x from PyPI, beside the Release stage's run against Debian's torch 1.13.
# Makes or reuses the virtual environment (scripts/torch2-env.sh), configures BUILD_DIR (default
# build-torch2) against its torch and Python, builds only what those tests run (the target
# cohort_torch_tests) and runs them. With PACKAGE_BUILD (CI passes the Release stage's tree), the
# Python tests are that build's instead, run by the venv's interpreter (COHORT_TEST_PYTHON,
# test/python/test-python.in): the extension links no libtorch, so the package built once for
# Debian's torch 1.13 is the one tested under torch 2.x. Then the pip route on the same torch:
# scripts/test-pip.sh installs this checkout into the venv and runs a 2-rank job through the venv's
# cohortrun; the package is uninstalled afterwards, so the cached venv stays as torch2-env.sh made
# it.
#   scripts/test-torch2.sh [BUILD_DIR [PACKAGE_BUILD [extra cmake arguments...]]]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-torch2}
package_build=${2:-}
if (($#)); then shift; fi
if (($#)); then shift; fi

venv=$(scripts/torch2-env.sh)
# A compiler cache beside the venv, kept between runs (CI builds a fresh clone each time): without
# it the build is most of this stage. Paths relative to the checkout, so any clone hits it.
source "$(dirname "$0")/ccache-env.sh"
# Without Cohort's NCCL backend: PyPI's CUDA torch brings its own NCCL (nvidia-nccl-cu13), newer
# than the CUDA toolkit's here; linking both fails (torch 2.15's libtorch_cuda needs symbols the
# toolkit's lacks) and one process can hold only one libnccl.so.2 (scripts/gpu/check.sh takes the
# wheel's instead). With the toolkit's CUDA runtime, though: the staged device backend and the torch
# adapter's CUDA path (torch/cuda_tensors.cc) are compiled and linked against this CUDA torch, so
# CI builds what the device check runs; without a GPU here the tests take CPU tensors (and the
# refusals of CUDA ones), and CUDA tensors are the device check's (scripts/gpu/).
log=$build_dir/configure.log
mkdir -p "$build_dir"
torch_cmake=$("$venv/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_cmake" \
  -DPython3_EXECUTABLE="$venv/bin/python" -DCOHORT_USE_NCCL=OFF -DCOHORT_USE_CUDA=ON \
  -DCOHORT_BUILD_EXAMPLES=OFF -DCOHORT_BUILD_BENCHMARKS=OFF "$@" >"$log" 2>&1 ||
  { cat "$log"; exit 1; }
grep -q "Cohort: Python package for $venv/bin/python" "$log" ||
  { cat "$log"; echo "test-torch2: no Python package for $venv" >&2; exit 1; }
grep -q "Cohort: libtorch has CUDA; Cohort::torch takes CUDA tensors" "$log" ||
  { cat "$log"; echo "test-torch2: the torch adapter's CUDA path is not built" >&2; exit 1; }
cmake --build "$build_dir" -j "$(nproc)" --target cohort_torch_tests
if [[ -n $package_build ]]; then
  ctest --test-dir "$build_dir" -R '^torch\.' --output-on-failure --timeout 300 -j 2
  COHORT_TEST_PYTHON="$venv/bin/python" ctest --test-dir "$package_build" -R '^python\.' \
    --output-on-failure --timeout 300 -j 2
else
  ctest --test-dir "$build_dir" -R '^(torch|python)\.' --output-on-failure --timeout 300 -j 2
fi

trap '"$venv/bin/pip" uninstall --yes --quiet cohort >/dev/null 2>&1 || true' EXIT
scripts/test-pip.sh "$venv"
