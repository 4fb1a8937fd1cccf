#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) in their own build directory and runs each
# one over its seed corpus for a few seconds. Any crash, sanitizer report, uncaught exception other
# than cohort::Error, or allocation over the limit fails the run; the input that caused it is
# saved under BUILD_DIR/fuzz-artifacts/. See docs/fuzzing.md for longer runs.
#
# Usage: test/fuzz/run.sh [BUILD_DIR [SECONDS_PER_HARNESS [HARNESS...]]]
#   BUILD_DIR defaults to build-fuzz, SECONDS_PER_HARNESS to 4, harnesses to all of them.
# CXX_FUZZ picks the compiler (default clang++).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir=${1:-build-fuzz}
seconds=${2:-4}
shift $(($# > 2 ? 2 : $#))

cmake -S . -B "$build_dir" -G Ninja -DCOHORT_FUZZ=ON -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" \
  -DCMAKE_C_COMPILER="${CC_FUZZ:-clang}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"

harnesses=("$@")
if ((${#harnesses[@]} == 0)); then
  for seeds in test/fuzz/corpus/*/; do harnesses+=("$(basename "$seeds")"); done
fi

artifacts=$PWD/$build_dir/fuzz-artifacts
mkdir -p "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for name in "${harnesses[@]}"; do
  # New inputs go to a scratch corpus in the build directory; the seeds stay as committed.
  scratch=$build_dir/fuzz-corpus/$name
  mkdir -p "$scratch"
  echo "fuzz: $name for ${seconds}s"
  # -malloc_limit_mb: no input is larger than -max_len, so a decoder that allocates megabytes
  # trusted a length it had not checked. -rss_limit_mb bounds the whole process as well.
  if ! "$build_dir/test/fuzz/${name}_fuzzer" -max_total_time="$seconds" -max_len=4096 \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=16 -print_final_stats=0 \
    -artifact_prefix="$artifacts/$name-" "$scratch" "test/fuzz/corpus/$name" \
    >"$build_dir/fuzz-$name.log" 2>&1; then
    tail -n 60 "$build_dir/fuzz-$name.log"
    failed+=("$name")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]} (inputs in $artifacts)" >&2
  exit 1
fi
echo "fuzz: ${#harnesses[@]} harnesses ran ${seconds}s each without a finding"
