# shellcheck shell=bash
# shellcheck disable=SC2154,SC2034  # mode, root, build, python, work... come from check.sh
# The steps of scripts/gpu/check.sh that know the machine: what it has (describe_environment), the
# carried dependencies (setup_deps), the CMake arguments of each mode (configure_arguments) and
# what the configure log must show (check_configure_log), and the benchmark runner (run_benches).
# Sourced by check.sh; `bash check-env.sh FUNCTION ARGS...` runs one function in a process of its
# own, which check.sh does for the steps it runs under `timeout`. Reads COHORT_CHECK_* and the
# variables check.sh sets (mode, root, build, deps, python, work).

# The NCCL of the nvidia-nccl-cu13 wheel, the one torch loads (never the system's libnccl.so.2).
nccl_wheel_dir() {
  "$python" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null
}

describe_environment() {
  local md=$1 sha=${commit:-}
  if [[ -z $sha ]] && sha=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
    sha="$sha ($(git -C "$root" status --short 2>/dev/null | wc -l) files changed)"
  fi
  [[ -n $sha ]] || sha="unknown (no .git here; pass --commit SHA)"
  {
    echo "| What | Value |"
    echo "|---|---|"
    echo "| Mode | $mode |"
    echo "| Commit | $sha |"
    echo "| GPU | $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
      2>/dev/null | paste -sd ';' | grep . || echo none) |"
    echo "| nvcc | $("$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none) |"
    echo "| NCCL wheel | $(nccl_wheel_dir || echo none) $("$python" -c \
      'import importlib.metadata as m; print(m.version("nvidia-nccl-cu13"))' 2>/dev/null) |"
    echo "| Python | $python $("$python" -c 'import sys; print(sys.version.split()[0])') |"
    echo "| torch | $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda,
      "available:", torch.cuda.is_available(), "devices:", torch.cuda.device_count(),
      "NCCL", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")' 2>&1 | tail -1) |"
    echo "| CMake | $(cmake --version | sed -n 1p) |"
    echo "| Compiler | $(c++ --version | sed -n 1p); CC=${CC:-unset} CXX=${CXX:-unset} |"
    echo "| Host | $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(. /etc/os-release; echo "$PRETTY_NAME") |"
  } >"$md"
  cat "$md"
}

# Unpacks the carried packages (scripts/gpu/gather.sh) into a prefix of the build folder and puts
# it first on CMake's search path; the libraries the image lacks go on LD_LIBRARY_PATH.
setup_deps() {
  deps_prefix=
  if compgen -G "$deps/*.deb" >/dev/null; then
    deps_prefix=$build/deps-prefix
    if bash "$here/unpack-deps.sh" "$deps" "$deps_prefix" >"$work/logs/deps.log" 2>&1; then
      export LD_LIBRARY_PATH=$deps_prefix/runtime-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      record deps passed 0 "$(tail -1 "$work/logs/deps.log")"
      return 0
    fi
    record deps failed 0 "unpack-deps.sh failed; see logs/deps.log"
    return 1
  fi
  if [[ $mode == device ]]; then
    record deps failed 0 "no .deb in $deps: run scripts/gpu/gather.sh before and carry .gpu-deps"
    return 1
  fi
  record deps passed 0 "no carried packages; the machine's own Gloo, cereal, CLI11, Catch2"
}

configure_arguments() {
  local prefixes=${deps_prefix:+$deps_prefix/usr} kind
  cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DPython3_EXECUTABLE=$python")
  # The linker must find what libgloo.so needs (libhiredis.so.0.14) where the image lacks it.
  if [[ -n $deps_prefix ]]; then
    for kind in EXE SHARED MODULE; do
      cmake_args+=("-DCMAKE_${kind}_LINKER_FLAGS=-Wl,-rpath-link,$deps_prefix/runtime-lib")
    done
  fi
  # CMake 4 refuses dependency configs that ask for policies older than 3.5.
  [[ $(cmake --version | grep -o '[0-9]*' | sed -n 1p) -ge 4 ]] &&
    cmake_args+=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)
  [[ -f /usr/include/zlib.h ]] ||
    cmake_args+=(-DCOHORT_BUILD_EXAMPLES=OFF)  # examples/torch needs zlib
  if [[ $mode == rehearse ]]; then
    # As CI's Release build (so the compiler cache hits), without NCCL and so without CUDA.
    cmake_args+=(-DCOHORT_USE_NCCL=OFF "-DCMAKE_PREFIX_PATH=$prefixes")
    return
  fi
  local wheel torch_prefix pybind11_dir
  wheel=$(nccl_wheel_dir)
  torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  pybind11_dir=$("$python" -m pybind11 --cmakedir 2>/dev/null)
  [[ -d /usr/local/cuda/bin ]] && export PATH=/usr/local/cuda/bin:$PATH
  # The machine runs as root: Open MPI refuses that unless told.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # H100 and H200 are sm_90; torch's CUDA config needs a list, Cohort compiles no CUDA with it.
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
  if [[ -n $wheel ]]; then
    cmake_args+=("-DNCCL_INCLUDE_DIR=$wheel/include" "-DNCCL_LIBRARY=$wheel/lib/libnccl.so.2")
    # Torch loads this libnccl.so.2; Cohort's programs must find the same one, not the system's.
    export LD_LIBRARY_PATH=$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  [[ -n $pybind11_dir ]] && cmake_args+=("-Dpybind11_DIR=$pybind11_dir")
  # The distribution's compiler, not whatever CC/CXX name: the image's /opt/gcc links libstdc++
  # statically, so libcohort.so carried a private libstdc++ whose symbols Gloo's calls then bound
  # to inside python (which loads no libstdc++ of its own), and every 2-rank init crashed in
  # gloo::rendezvous::Context::connectFullMesh (the first device check, 2026-11-27).
  # test/package's packaging.shared_libstdcxx names that fault if it comes back.
  if [[ -x /usr/bin/g++ && -x /usr/bin/gcc ]]; then
    cmake_args+=(-DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++)
  fi
  cmake_args+=(-DCOHORT_USE_NCCL=ON "-DCMAKE_PREFIX_PATH=${prefixes:+$prefixes;}$torch_prefix")
}

# What device mode must have found; a missing piece fails the configure step loudly.
check_configure_log() {
  local log=$1 missing=() wheel
  if [[ $mode == device ]]; then
    wheel=$(nccl_wheel_dir)
    grep -q "Cohort: NCCL found (${wheel:-no-wheel}/lib/libnccl.so.2)" "$log" ||
      missing+=("NCCL of the nvidia-nccl-cu13 wheel (${wheel:-python3 has no nvidia.nccl})")
    grep -q "Cohort: libtorch has CUDA; Cohort::torch takes CUDA tensors" "$log" ||
      missing+=("torch's CUDA path (COHORT_TORCH_CUDA; torch/CMakeLists.txt)")
  else
    grep -q "building without the NCCL backend" "$log" || missing+=("a build without NCCL")
  fi
  grep -q "Cohort: Python package for $python" "$log" || missing+=("the Python package for $python")
  if ((${#missing[@]})); then
    local note
    note="configure did not find: $(printf '%s; ' "${missing[@]}")see logs/configure.log"
    echo "check.sh: $note" >&2
    sed -i "s|^configure\tpassed\t\([0-9]*\)\t.*|configure\tfailed\t\1\t$note|" "$steps_file"
    failed=1
    return 1
  fi
}

# Every bench/gpu/*.sh in name order, each with what is left of the deadline (at most 240 s):
# its table in OUTDIR/NAME.md, its stderr in OUTDIR/NAME.log, a line per script in
# OUTDIR/results.tsv (name, exit status, seconds). In rehearse mode each must exit 77.
run_benches() {
  local src=$1 bdir=$2 odir=$3 rmode=$4 s name rc t0 budget bad=0
  : >"$odir/results.tsv"
  for s in "$src"/bench/gpu/*.sh; do
    [[ -e $s ]] || continue
    name=$(basename "$s" .sh)
    # --benches a,b|none (check.sh): only those.
    if [[ -n ${COHORT_CHECK_BENCHES:-} && ,$COHORT_CHECK_BENCHES, != *,$name,* ]]; then
      printf '%s\tnot asked for\t0\n' "$name" >>"$odir/results.tsv"
      continue
    fi
    budget=$((COHORT_CHECK_DEADLINE_EPOCH - $(date +%s) - 20))
    ((budget > 240)) && budget=240
    if ((budget < 5)); then
      printf '%s\tnot reached\t0\n' "$name" >>"$odir/results.tsv"
      continue
    fi
    echo "bench $name (up to ${budget} s)"
    t0=$(date +%s)
    timeout --kill-after=5 "$budget" bash "$s" "$bdir" "$odir/$name" >"$odir/$name.md" \
      2>"$odir/$name.log"
    rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$odir/results.tsv"
    if [[ $rmode == rehearse ]]; then
      ((rc == 77)) || { echo "bench $name exited $rc without a GPU, not 77"; bad=1; }
    elif ((rc != 0)); then
      bad=1
    fi
  done
  return "$bad"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  here=$(cd "$(dirname "$0")" && pwd)
  "$@"
fi
