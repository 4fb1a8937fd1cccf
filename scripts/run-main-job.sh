#!/usr/bin/env bash
# The main job: install the packages, build, and run the elastic training demo on this machine
# (examples/elastic_demo.sh: a libtorch CNN learning handwritten digits, examples/torch/
# digits_cnn.cc, trained by 2-4 workers while a host is added, a worker is killed with SIGKILL and
# a host is removed; it ends with the held-out accuracy and a summary). Arguments go to the demo,
# e.g. --program elastic_mlp for the hand-written MLP (see the top of examples/elastic_demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh build-main -DCMAKE_BUILD_TYPE=Release -DCOHORT_BUILD_TESTS=OFF
# The CNN needs the torch adapter, which is built only when CMake found Torch.
if [[ ${1:-} != --program && ! -x build-main/bin/digits_cnn ]]; then
  echo "run-main-job: Torch was not found, so the CNN (build-main/bin/digits_cnn) was not built;" \
    "install libtorch-dev (scripts/install-deps.sh does) and run this again" >&2
  exit 1
fi
examples/elastic_demo.sh build-main "$@"
