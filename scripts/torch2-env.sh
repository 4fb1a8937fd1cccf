#!/usr/bin/env bash
# Makes (once) and prints the path of a virtual environment with torch 2.x from PyPI and what the
# Python tests need, for building and testing Cohort against it (scripts/test-torch2.sh).
#   scripts/torch2-env.sh            -> prints e.g. /root/.cache/cohort/venv-torch-2.15.0
# The environment lives outside the checkout, in ${COHORT_CACHE_DIR:-$HOME/.cache/cohort}, so CI
# runs on one machine share it. It is reused when its marker file says it was completed and its
# Python still imports the pinned torch, numpy and pytest; otherwise (missing, interrupted, broken)
# it is made again. A lock keeps two runs from making it at once. Built on Debian's Python
# (/usr/bin/python3 -m venv: python3-venv, see scripts/install-deps.sh), whose headers the
# extension cohort._C builds against.
set -euo pipefail

torch_version=2.15.0  # the newest torch 2.x on PyPI (2026-11); change it here only
python=/usr/bin/python3
cache=${COHORT_CACHE_DIR:-$HOME/.cache/cohort}
venv=$cache/venv-torch-$torch_version
marker=$venv/.cohort-complete

usable() {  # the venv was completed and imports what the tests need, at the pinned version
  [[ -f $marker ]] && "$venv/bin/python" - "$torch_version" <<'EOF' >/dev/null 2>&1
import sys
import numpy, pytest, torch
sys.exit(torch.__version__.split("+")[0] != sys.argv[1])
EOF
}

make_venv() {
  echo "torch2-env: making $venv (torch $torch_version; takes minutes)" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-input "torch==$torch_version" numpy pytest >&2
  echo "torch $torch_version, made $(date -u +%FT%TZ)" >"$marker"
  usable || { echo "torch2-env: $venv does not import torch $torch_version" >&2; exit 1; }
}

mkdir -p "$cache"
exec 9>"$cache/venv-torch-$torch_version.lock"
flock --timeout 1800 9 || { echo "torch2-env: timed out waiting for $cache's lock" >&2; exit 1; }
usable || make_venv
echo "$venv"
