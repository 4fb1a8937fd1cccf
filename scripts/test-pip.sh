#!/usr/bin/env bash
# The pip route, end to end (docs/pytorch.md): installs this checkout into an existing virtual
# environment that has torch, then runs a real 2-rank training job through that environment's
# `cohortrun` and `python`, with no PYTHONPATH, and checks that it succeeded.
#   scripts/test-pip.sh VENV_DIR [--dist]
# --dist also makes an sdist (python -m build --sdist, if the venv has `build`) and a wheel from
# it with pip, which checks that the sdist builds; a cold build of its own (minutes).
# Environment: COHORT_PIP_ARGS, extra arguments for `pip install` (e.g. --no-build-isolation).
# Repeated runs are incremental: scikit-build-core keeps its build in build-pip/, and ccache, where
# present, is the compiler launcher (scripts/ccache-env.sh).
set -euo pipefail
venv=${1:?usage: scripts/test-pip.sh VENV_DIR [--dist]}
dist=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(cd "$venv" && pwd)
fail() { echo "test-pip: FAIL: $*" >&2; exit 1; }

[[ -x $venv/bin/python && -x $venv/bin/pip ]] || fail "$venv is not a virtual environment"
"$venv/bin/python" -I -c "import torch" 2>/dev/null ||
  fail "$venv has no torch; install it first ($venv/bin/pip install torch)"
# The job below (examples/torch/train_digits.py) needs numpy, which torch 2.x does not pull in.
"$venv/bin/python" -I -c "import numpy" 2>/dev/null || "$venv/bin/pip" install -q numpy
source "$root/scripts/ccache-env.sh"
unset PYTHONPATH

start=$SECONDS
# shellcheck disable=SC2086 # COHORT_PIP_ARGS is a list of arguments
"$venv/bin/pip" install ${COHORT_PIP_ARGS:-} "$root" || fail "pip install $root"
echo "test-pip: pip install took $((SECONDS - start)) s"

# From a folder of its own, so that nothing of the checkout is imported instead of what pip
# installed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$venv/bin/python" -c "import cohort.torch, cohort; print('test-pip: imported', cohort.__file__)"
[[ -x $venv/bin/cohortrun ]] || fail "pip did not install $venv/bin/cohortrun"
COHORT_TIMEOUT_SECONDS=30 timeout 300 "$venv/bin/cohortrun" -np 2 "$venv/bin/python" \
  "$root/examples/torch/train_digits.py" --epochs 2 >job.log 2>&1 ||
  { cat job.log; fail "the 2-rank job through $venv/bin/cohortrun failed"; }
grep -q "every sample of every epoch trained exactly once: yes" job.log ||
  { cat job.log; fail "the job did not train every sample exactly once"; }
grep "held-out accuracy" job.log | tail -1

if [[ $dist == --dist ]]; then
  "$venv/bin/python" -c "import build" 2>/dev/null ||
    fail "--dist needs the build package in $venv ($venv/bin/pip install build)"
  "$venv/bin/python" -m build --sdist --outdir "$work/dist" "$root" >/dev/null ||
    fail "python -m build --sdist"
  sdist=$(ls "$work"/dist/cohort-*.tar.gz)
  # pip's build isolation keeps the venv's interpreter, so the wheel finds its torch.
  "$venv/bin/pip" wheel -q --no-deps --wheel-dir "$work/dist" "$sdist" || fail "wheel from $sdist"
  ls -l "$work"/dist
fi
echo "test-pip: PASS ($venv)"
