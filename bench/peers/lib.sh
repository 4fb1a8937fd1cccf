# shellcheck shell=bash
# Sourced by install.sh and run.sh (bench/peers): the settings both read, parsed here only.
#   PEERS_DIR  where the peers' venvs, logs and <peer>.ok / <peer>.failed files live
#              (default ${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/peers)
PEERS_DIR=${PEERS_DIR:-${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/peers}
# The venv each peer system runs from: Horovod's own, torch 2.x's shared by torchrun and TorchFT.
peer_venv() { case $1 in horovod) echo horovod ;; torch|torchft|torch2) echo torch2 ;; esac; }
