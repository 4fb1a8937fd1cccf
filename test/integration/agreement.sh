#!/usr/bin/env bash
# Settings that every rank must hold alike (core/agreement.h): one rank given another value of
# each, behind cohortrun's back, makes every rank's init() fail at once with the same error naming
# the setting, the ranks and the hosts on each side. Before the check, COHORT_CONTROL_LEADERS=1 on
# one host only failed after COHORT_TIMEOUT_SECONDS ("rank(s) 0 did not arrive") and
# COHORT_SHARED_MEMORY_DISABLE=1 on one rank with "bad control address" and binary bytes. Under
# mpirun, COHORT_CPU_OPERATIONS=mpi on one rank and gloo on the others is compared over MPI
# before Gloo's bootstrap, which that rank would never join. 3 ranks as 2 hosts (2 + 1).
#   agreement.sh COHORTRUN INIT_CHECK MPIRUN...
set -euo pipefail
cohortrun=$1 worker=$2
shift 2
mpirun=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { cat "$tmp/out"; echo "FAIL: $*"; exit 1; }
prefix="InvalidArgument: the ranks hold different values of settings that every rank must hold alike (docs/environment.md): "

# differs NAME VALUE DEFAULT: rank 2, alone on host 127.0.0.2, holds NAME=VALUE.
differs() {
  local name=$1 value=$2 default=$3
  # Bounded well below COHORT_TIMEOUT_SECONDS (20 s in ctest): "at once", not after a timeout.
  timeout -k 2 10 "$cohortrun" -np 3 -H 127.0.0.1:2,127.0.0.2:1 sh -c \
    '[ "$COHORT_RANK" = 2 ] && export "$1=$2"; exec "$3"' sh "$name" "$value" "$worker" \
    >"$tmp/out" 2>&1 || fail "cohortrun failed or was killed at 10 s, $name=$value on rank 2"
  local cause="$prefix$name: '$default' on ranks 0 to 1 (host 127.0.0.1), '$value' on rank 2 (host 127.0.0.2)"
  for r in 0 1 2; do
    grep -qxF -- "[$r] rank $r: $cause" "$tmp/out" || fail "rank $r was not told: $cause"
  done
}
differs COHORT_PEER_TIMEOUT_SECONDS 3 5
differs COHORT_SHARED_MEMORY_DISABLE 1 0
differs COHORT_CONTROL_LEADERS 1 auto
differs COHORT_CONTROL_LEADERS 0 auto
differs COHORT_HIERARCHICAL 0 auto
differs COHORT_SHARED_MEMORY_SLOT_BYTES 8192 1048576
differs COHORT_DEVICE_OPERATIONS staged auto
differs COHORT_STAGED_CHUNK_BYTES 1024 4194304

# Two settings at once, the ranks split 1 + 2: both named, each with its sides.
timeout -k 2 10 "$cohortrun" -np 3 -H 127.0.0.1:2,127.0.0.2:1 sh -c \
  '[ "$COHORT_RANK" = 0 ] && export COHORT_HIERARCHICAL=1 COHORT_CONTROL_LEADERS=0; exec "$0"' \
  "$worker" >"$tmp/out" 2>&1 || fail "cohortrun failed with two settings apart"
both="${prefix}COHORT_CONTROL_LEADERS: '0' on rank 0 (host 127.0.0.1), 'auto' on ranks 1 to 2 (hosts 127.0.0.1, 127.0.0.2); COHORT_HIERARCHICAL: '1' on rank 0 (host 127.0.0.1), 'auto' on ranks 1 to 2 (hosts 127.0.0.1, 127.0.0.2)"
for r in 0 1 2; do grep -qxF -- "[$r] rank $r: $both" "$tmp/out" || fail "rank $r was not told: $both"; done

# The same values everywhere, set or not: the job starts.
timeout -k 2 20 "$cohortrun" -np 3 -H 127.0.0.1:2,127.0.0.2:1 env COHORT_HIERARCHICAL=0 "$worker" \
  >"$tmp/out" 2>&1 || fail "a job with one value everywhere failed"
for r in 0 1 2; do grep -qxF "[$r] rank $r: started" "$tmp/out" || fail "rank $r did not start"; done

# Under mpirun: MPI's operations on rank 1, Gloo's on rank 0 (ranks named by MPI, hosts by name).
timeout -k 2 20 env -u COHORT_CPU_OPERATIONS "${mpirun[@]}" -np 2 sh -c \
  '[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export COHORT_CPU_OPERATIONS=mpi || export COHORT_CPU_OPERATIONS=gloo
   exec "$0"' "$worker" >"$tmp/out" 2>&1 ||
  fail "mpirun failed or was killed at 20 s with COHORT_CPU_OPERATIONS apart"
host=$(hostname)
cause="${prefix}COHORT_CPU_OPERATIONS: 'gloo' on rank 0 (host $host), 'mpi' on rank 1 (host $host)"
for r in 0 1; do grep -qxF -- "rank $r: $cause" "$tmp/out" || fail "mpirun rank $r was not told: $cause"; done
echo "agreement: every rank was told at once which settings differ, and where"
