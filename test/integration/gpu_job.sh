#!/bin/sh
# Runs a GPU check program under a launcher, or reports why it is skipped.
#   gpu_job.sh PROGRAM LAUNCHER ARGS...
# First `PROGRAM --probe`, which exits 77 (ctest's SKIP_RETURN_CODE) with a one-line reason when
# no CUDA device is usable: cohortrun turns a worker's exit status 77 into 1, so the skip must be
# decided before it starts. Then the launcher command, whose exit status is the test's.
program=$1
shift
"$program" --probe || exit $?
exec "$@"
