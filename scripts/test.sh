#!/usr/bin/env bash
# Install, build and run every test: a Release build (-O3, whose optimizer warnings are errors
# too), then an ASan+UBSan build of the tests, then a ThreadSanitizer build of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

scripts/build.sh build -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build --output-on-failure --timeout 300 -j 2

# Locking: clang's -Wthread-safety over the project (libraries, programs, examples, benchmarks,
# tests), compiled at -O0; of its tests only the three that prove the analysis is live run
# (docs/thread-safety.md). Not the torch adapter and the Python module: Debian's torch 1.13
# headers do not compile with clang 14 in C++20 (std::vector of the incomplete c10::IValue).
scripts/build.sh build-thread-safety -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 \
  -DCOHORT_THREAD_SAFETY=ON -DCOHORT_BUILD_TORCH=OFF
ctest --test-dir build-thread-safety -R '^thread_safety\.' --output-on-failure

# The torch adapter's tests again, built against the newest torch 2.x from PyPI (a venv cached on
# the machine, scripts/torch2-env.sh), and the Release build's Python package tested again under
# that torch (it links no libtorch), then `pip install .` into that venv and a 2-rank job through
# its cohortrun (scripts/test-pip.sh).
scripts/test-torch2.sh build-torch2 build

# Sanitizers: leaks in MPI's own start-up are not ours, so leak checking stays off; any other
# report fails the test. Sanitizer builds leave out the torch adapter and the Python package
# (CMakeLists.txt): Debian's libtorch is not instrumented, so their tests run in the stage above.
# Unoptimized (Debug): GCC's UBSan instrumentation at -O2 made this build 737 s of CI's 30
# minutes; at -O0 it takes 213 s and its tests 161 s instead of 130 s.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DCOHORT_SANITIZE=address,undefined \
  -DCOHORT_BUILD_EXAMPLES=OFF -DCOHORT_BUILD_BENCHMARKS=OFF
ctest --test-dir build-asan --output-on-failure --timeout 600 -j 2

# Fuzzing: every decoder of bytes from the network or the disk, under libFuzzer with ASan + UBSan,
# a few seconds each over the seed corpus (test/fuzz/run.sh; docs/fuzzing.md runs them longer). A
# crash, a sanitizer report, an error other than cohort::Error or a large allocation fails it.
test/fuzz/run.sh build-fuzz 4

# ThreadSanitizer: every test again. test/tsan.supp holds the reports inside Debian's
# uninstrumented Gloo and Open MPI, each explained; any other report fails the stage. Reports go
# to files, not only to the failing process's stderr, because some tests expect a worker to fail
# (peer_death.sh, stall_check.sh) and would take a TSan exit for the failure they wanted; so any
# report file fails the stage whatever the tests said. The tests' own time limits are tripled for
# this build in test/CMakeLists.txt (`ctest --timeout` would not raise them).
scripts/build.sh build-tsan -DCOHORT_SANITIZE=thread -DCOHORT_BUILD_EXAMPLES=OFF \
  -DCOHORT_BUILD_BENCHMARKS=OFF
tsan_reports=$PWD/build-tsan/tsan-reports
# history_size=4 (512K accesses per thread instead of 32K): the suppression of Gloo's own race
# matches a frame of the earlier access's stack, which TSan otherwise sometimes fails to restore
# ("[failed to restore the stack]") in a long Gloo allreduce of 3 ranks, and then reports it.
export TSAN_OPTIONS="suppressions=$PWD/test/tsan.supp halt_on_error=1 second_deadlock_stack=1 history_size=4 log_path=$tsan_reports/report"
rm -rf "$tsan_reports" && mkdir -p "$tsan_reports"
rc=0
ctest --test-dir build-tsan --output-on-failure -j 2 || rc=$?
if compgen -G "$tsan_reports/report.*" >/dev/null; then
  cat "$tsan_reports"/report.*
  echo "test.sh: ThreadSanitizer reported the above ($(ls "$tsan_reports" | wc -l) process(es))" >&2
  exit 1
fi
exit "$rc"
