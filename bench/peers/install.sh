#!/usr/bin/env bash
# Installs the peers Cohort is measured against (issue 28) from PyPI, each into its own venv under
# PEERS_DIR, never into the system interpreter. Idempotent: a peer whose venv is complete
# (PEERS_DIR/<peer>.ok) is skipped. A peer that cannot be installed leaves PEERS_DIR/<peer>.failed
# with the reason, which bench/peers/run.sh prints in its tables.
#
#   bench/peers/install.sh [--peers horovod,torch2]
#
# Peers:
#   horovod  Horovod 0.28.1 (sdist, compiled: PyTorch + Gloo, MPI when it builds) against Debian's
#            torch 1.13 (/usr/bin/python3, venv with --system-site-packages). Compiled under
#            nice -n 15 with COHORT_PEERS_JOBS (default 2) jobs.
#   torch2   torch 2.15.0 (DDP, torchrun, torch.distributed gloo) and TorchFT 0.2.0 with its
#            Lighthouse (torchft_lighthouse) in one venv: TorchFT 0.2.0 requires torch >= 2.7.
# Environment: PEERS_DIR (default ${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/peers).
set -uo pipefail

source "$(dirname "$0")/lib.sh"
JOBS=${COHORT_PEERS_JOBS:-2}
PYTHON=/usr/bin/python3
HOROVOD_VERSION=0.28.1
TORCH_VERSION=2.15.0  # the newest torch 2.x on PyPI (2026-11); scripts/torch2-env.sh pins the same
TORCHFT_VERSION=0.2.0
peers=horovod,torch2

while [ $# -gt 0 ]; do
  case $1 in
    --peers) peers=$2; shift 2 ;;
    *) echo "install.sh: unknown argument '$1' (usage: install.sh [--peers horovod,torch2])" >&2; exit 2 ;;
  esac
done
mkdir -p "$PEERS_DIR"

# fail PEER REASON LOG: records why PEER could not be installed.
fail() {
  { echo "$2"; [ -f "$3" ] && tail -n 5 "$3" | awk '{ print "  " $0 }'; } > "$PEERS_DIR/$1.failed"
  echo "install.sh: $1 could not be installed: $2 (log: $3)" >&2
}

# versions VENV PACKAGE...: "package==version" of each package installed in VENV.
versions() {
  local venv=$1; shift
  "$venv/bin/python" - "$@" <<'PY'
import importlib.metadata as m, sys
for p in sys.argv[1:]:
    try: print(f"{p}=={m.version(p)}")
    except m.PackageNotFoundError: print(f"{p}: not installed")
PY
}

install_horovod() {
  local venv=$PEERS_DIR/horovod log=$PEERS_DIR/horovod.log start=$SECONDS
  rm -rf "$venv"
  "$PYTHON" -m venv --system-site-packages "$venv" > "$log" 2>&1 ||
    { fail horovod "python3 -m venv failed" "$log"; return 1; }
  "$venv/bin/pip" install -q setuptools wheel 'cmake<4' >> "$log" 2>&1 ||
    { fail horovod "pip could not install Horovod's build tools" "$log"; return 1; }
  local mpi mpi_flag
  for mpi in 1 0; do
    echo "== Horovod $HOROVOD_VERSION, HOROVOD_WITH_MPI=$mpi" >> "$log"
    if [ $mpi = 1 ]; then mpi_flag=HOROVOD_WITH_MPI=1; else mpi_flag=HOROVOD_WITHOUT_MPI=1; fi
    if env HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
        HOROVOD_WITHOUT_MXNET=1 "$mpi_flag" \
        MAKEFLAGS=-j$JOBS CMAKE_BUILD_PARALLEL_LEVEL=$JOBS \
        nice -n 15 "$venv/bin/pip" install -v --no-build-isolation --no-cache-dir \
        "horovod==$HOROVOD_VERSION" >> "$log" 2>&1; then
      { versions "$venv" horovod torch; echo "horovod_mpi=$mpi";
        echo "horovod_cold_install_s=$((SECONDS - start))"; } > "$PEERS_DIR/horovod.ok"
      return 0
    fi
  done
  fail horovod "pip install horovod==$HOROVOD_VERSION failed to build (with and without MPI)" "$log"
}

install_torch2() {
  local venv=$PEERS_DIR/torch2 log=$PEERS_DIR/torch2.log start=$SECONDS
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv" > "$log" 2>&1 || { fail torch2 "python3 -m venv failed" "$log"; return 1; }
  # scikit-build-core and pybind11: run.sh pip-installs this checkout into the venv (Cohort on torch 2).
  "$venv/bin/pip" install "torch==$TORCH_VERSION" "torchft==$TORCHFT_VERSION" numpy \
    "scikit-build-core>=0.10" pybind11 >> "$log" 2>&1 ||
    { fail torch2 "pip install torch==$TORCH_VERSION torchft==$TORCHFT_VERSION failed" "$log"; return 1; }
  [ -x "$venv/bin/torchft_lighthouse" ] ||
    { fail torch2 "torchft $TORCHFT_VERSION installed no torchft_lighthouse" "$log"; return 1; }
  { versions "$venv" torch torchft; echo "torch2_cold_install_s=$((SECONDS - start))"; } > "$PEERS_DIR/torch2.ok"
}

status=0
for peer in ${peers//,/ }; do
  case $peer in
    horovod|torch2) ;;
    *) echo "install.sh: unknown peer '$peer' (known: horovod, torch2)" >&2; exit 2 ;;
  esac
  if [ -f "$PEERS_DIR/$peer.ok" ]; then
    echo "install.sh: $peer already installed in $PEERS_DIR/$peer"
    continue
  fi
  rm -f "$PEERS_DIR/$peer.failed"
  echo "install.sh: installing $peer into $PEERS_DIR/$peer (log: $PEERS_DIR/$peer.log)"
  "install_$peer" || status=1
done
cat "$PEERS_DIR"/*.ok > "$PEERS_DIR/versions.txt" 2>/dev/null
echo "install.sh: versions in $PEERS_DIR/versions.txt"
exit $status
