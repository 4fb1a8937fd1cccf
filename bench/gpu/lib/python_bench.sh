# shellcheck shell=bash
# What the Python GPU benchmarks (bench/gpu/torch_step.sh, commit_cuda.sh) share, sourced by each
# (kept in lib/, since scripts/gpu/check.sh runs every bench/gpu/*.sh as a benchmark):
# their arguments, the Python that BUILD_DIR's cohort package was built for, and the skip (exit 77,
# one line saying why) when that Python's torch sees no usable GPU.
#   source lib/python_bench.sh; gpu_python_setup NAME "$@"   (sets root build out quick python pypath)
gpu_python_setup() {
  local name=$1
  shift
  if [[ $# -lt 2 ]]; then
    echo "usage: bench/gpu/$name.sh BUILD_DIR OUT_DIR [--quick]" >&2
    exit 2
  fi
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
  build=$(cd "$1" && pwd) out=$2 quick=0
  [[ ${3:-} == --quick ]] && quick=1
  mkdir -p "$out"
  python=$(sed -n 's/^COHORT_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
  if [[ -z $python || ! -d $build/python/cohort ]]; then
    echo "SKIP ($name): $build has no cohort Python package (configure with a torch)"
    exit 77
  fi
  pypath=$build/python:$root/bench/peers
  local why
  why=$(PYTHONPATH=$pypath "$python" -c 'import torch
print("" if torch.cuda.is_available() else
      f"no usable CUDA GPU (torch {torch.__version__}, CUDA {torch.version.cuda})")' 2>&1) ||
    { echo "FAIL ($name): cannot import torch with $python: $why"; exit 1; }
  [[ -z $why ]] || { echo "SKIP ($name): $why"; exit 77; }
}
