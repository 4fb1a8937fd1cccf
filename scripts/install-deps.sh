#!/usr/bin/env bash
# Installs the Debian packages Cohort needs to build, test and run. Safe to run repeatedly.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config ccache
  libgloo-dev libopenmpi-dev openmpi-bin
  libcereal-dev catch2 libcli11-dev libssl-dev
  libcurl4-openssl-dev nlohmann-json3-dev  # the etcd store (rendezvous/etcd_*)
  etcd-server etcd-client  # the etcd tests start a real etcd
  python3  # the timeline test parses the JSON it writes; the docs checks are Python
  doxygen  # the API reference (docs.doxygen)
  clang libclang-rt-14-dev  # the libFuzzer harnesses (test/fuzz): bookworm's clang is clang 14
  gnuplot-nox  # scripts/plot-busbw.sh draws docs/img/busbw*.svg
  prometheus  # promtool checks cohortrun --metrics-file in the tests
  openssh-client openssh-server  # cohortrun's remote hosts; test/remote starts sshd in netns
  iproute2 util-linux  # ip netns for test/remote; setsid on remote hosts
  # The torch adapter and the Python package. python3-torch does not pull libtorch-dev without
  # recommends; sklearn is only for the digits data set it ships (the main job's data).
  libtorch-dev python3-torch pybind11-dev python3-pybind11 python3-numpy python3-pytest
  python3-sklearn zlib1g-dev
  python3-venv  # scripts/test-torch2.sh and scripts/test-pip.sh: venvs with torch 2.x from PyPI
)

missing=()
for p in "${packages[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
