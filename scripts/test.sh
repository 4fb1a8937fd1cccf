#!/usr/bin/env bash
# Install, build and run every test: the normal build, then an ASan+UBSan build of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

scripts/build.sh build
ctest --test-dir build --output-on-failure --timeout 300 -j 2

# Sanitizers: leaks in MPI's own start-up are not ours, so leak checking stays off; any other
# report fails the test.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
scripts/build.sh build-asan -DCOHORT_SANITIZE=address,undefined -DCOHORT_BUILD_EXAMPLES=OFF
ctest --test-dir build-asan --output-on-failure --timeout 600 -j 2
