#!/usr/bin/env bash
# Whole cohortrun processes given values that must be refused before anything starts: the
# Kubernetes operators' variables in every mode, whether the mode reads them or not; numbers not
# spelt as numbers (base/decimal.h); ports out of range. Each run has only the environment given
# here, must exit 2 with the one line that names the variable or flag and the value, and must start
# no worker. No etcd runs: a value that got through would have the agent wait for one (and the
# `timeout` would end it). Nothing here sleeps to order events.
#   refused_values_test.sh COHORTRUN PROBE
set -euo pipefail
cohortrun=$1 probe=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
secret=$(printf '%064d' 0)

# run ENV... -- ARGS...: cohortrun ARGS PROBE env, with only PATH, COHORT_SECRET and ENV; its
# output in $tmp/out, its status in $rc.
run() {
  local vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  rc=0
  timeout 60 env -i PATH="$PATH" COHORT_SECRET="$secret" "${vars[@]}" \
    "$cohortrun" "$@" "$probe" env >"$tmp/out" 2>&1 || rc=$?
}
# refused EXPECTED ENV... -- ARGS...: exit 2, the line "cohortrun: EXPECTED", no worker.
refused() {
  local expected=$1
  shift
  run "$@"
  [[ $rc -eq 2 ]] || { cat "$tmp/out"; fail "exited $rc, expected 2: $*"; }
  grep -qxF -- "cohortrun: $expected" "$tmp/out" || { cat "$tmp/out"; fail "no line 'cohortrun: $expected' for: $*"; }
  if grep -q "rank=" "$tmp/out"; then fail "a worker started for: $*"; fi
}

# A port out of range used to pass and fail 10 s later in libcurl ("URL using bad/illegal format").
etcd=(PET_RDZV_BACKEND=etcd PET_RDZV_ID=job7)
refused "PET_RDZV_ENDPOINT='127.0.0.1:99999' is not etcd's host:port or URLs: etcd endpoint 'http://127.0.0.1:99999': port '99999' is not a whole number from 1 to 65535" \
  "${etcd[@]}" PET_RDZV_ENDPOINT=127.0.0.1:99999 PET_NNODES=1 --
refused "--rdzv-endpoints: etcd endpoint 'http://127.0.0.1:99999': port '99999' is not a whole number from 1 to 65535 (see cohortrun --help)" \
  -- --rdzv-backend etcd --rdzv-endpoints http://127.0.0.1:99999 --rdzv-id job7

# Variables the chosen mode does not read are checked all the same.
refused "PET_RDZV_ID='a/b' is not a job id (letters, digits, . _ -)" \
  PET_NNODES=1 PET_RDZV_ID=a/b -- -np 1
refused "PET_RDZV_ENDPOINT='ftp://' is not etcd's host:port or URLs: etcd endpoint 'ftp://' is not an http:// or https:// URL" \
  PET_NNODES=1 PET_RDZV_ENDPOINT=ftp:// -- -np 1
refused "PET_NPROC_PER_NODE='abc' is not a whole number from 1 to 4096" \
  PET_NPROC_PER_NODE=abc -- -H localhost:1
refused "PET_NPROC_PER_NODE='0' is not a whole number from 1 to 4096" \
  PET_NPROC_PER_NODE=0 -- -H localhost:1 --min-np 1
refused "PET_STANDALONE='2' is not 0, 1 or empty (torchrun's --standalone)" \
  PET_NNODES=1 PET_STANDALONE=2 -- -np 1
refused "MASTER_PORT='0' is not a whole number from 1 to 65535" \
  PET_NNODES=1 MASTER_PORT=0 -- -np 1
refused "PET_MASTER_PORT='29500 ' is not a whole number from 1 to 65535 (write 29500, without spaces)" \
  "${etcd[@]}" PET_RDZV_ENDPOINT=127.0.0.1:1 PET_MASTER_PORT="29500 " --
refused "OMPI_MCA_orte_set_default_slots='04' is not a whole number from 1 to 4096 (write 4, without leading zeros)" \
  OMPI_MCA_orte_set_default_slots=04 -- -np 1

# One spelling per number: torchrun's int() takes "-0" and "007", Cohort does not.
refused "PET_NODE_RANK='-0' is not a node rank from 0 to 0 (write 0, without a sign; PET_NNODES' MAX is 1)" \
  PET_NNODES=1 PET_NODE_RANK=-0 -- -np 1
refused "PET_NODE_RANK='007' is not a node rank from 0 to 7 (write 7, without leading zeros; PET_NNODES' MAX is 8)" \
  "${etcd[@]}" PET_RDZV_ENDPOINT=127.0.0.1:1 PET_NNODES=8 PET_NODE_RANK=007 --
refused "-np: '007' is not a whole number (write 7, without leading zeros)" -- -np 007
refused "host list entry 'localhost:02': slot count '02' is not a whole number between 1 and 4096 (write 2, without leading zeros)" \
  -- -H localhost:02
refused "--cache-capacity: COHORT_CACHE_CAPACITY='007' is invalid: expected a whole number from 0 to 16777216 (write 7, without leading zeros)" \
  -- --cache-capacity 007 -np 1
refused "--console-ranks: '00' is not a list of ranks such as 0 or 0,2-3" -- --console-ranks 00 -np 1
# CLI11 alone reads integers as strtoll's base 0: 0x16 was port 22, 010 was 8 slots.
refused "--ssh-port: '0x16' is not a whole number from 1 to 65535 (see cohortrun --help)" \
  -- --ssh-port 0x16 -np 1
refused "--slots-per-host: '010' is not a whole number from 1 to 4096 (write 10, without leading zeros) (see cohortrun --help)" \
  -- --slots-per-host 010 -np 1
refused "--node-address: '10.0.0.1:7000' is not a host name or an IPv4 address (see cohortrun --help)" \
  -- --rdzv-backend etcd --node-address 10.0.0.1:7000
refused "--nproc-per-node: '+2' is not a whole number from 1 to 4096 (write 2, without a '+' sign) (see cohortrun --help)" \
  -- --rdzv-backend etcd --nproc-per-node +2

# A valid variable that the mode does not read is said at info level, and the job runs.
run PET_NNODES=1 PET_RDZV_ID=job7 PET_STANDALONE= PET_RDZV_CONF=k=v -- --verbose -np 1
[[ $rc -eq 0 ]] || { cat "$tmp/out"; fail "a valid one-node environment exited $rc"; }
grep -qF "INFO: PET_RDZV_ID='job7' is valid but not read by the one launcher (--rdzv-backend builtin) (docs/kubernetes.md)" \
  "$tmp/out" || { cat "$tmp/out"; fail "no info line for the ignored PET_RDZV_ID"; }
grep -q "^\[0\] rank=0 size=1 " "$tmp/out" || { cat "$tmp/out"; fail "the worker did not run"; }
echo "refused values: all checks passed"
