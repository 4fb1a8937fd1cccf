#!/usr/bin/env bash
# The main job: install the packages, build, and run the elastic training demo on this machine
# (examples/elastic_demo.sh: an MLP trained by 2-4 workers while a host is added, a worker is
# killed with SIGKILL and a host is removed; it ends with the accuracy and a summary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build-main -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_TESTS=OFF
examples/elastic_demo.sh build-main "$@"
