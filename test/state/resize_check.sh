#!/usr/bin/env bash
# A world-size change through a checkpoint: a job of A ranks trains part of an epoch and saves; a
# job of B ranks resumes from it and finishes the epoch; the committed histories of both together
# must train every sample exactly once. Usage: resize_check.sh COHORTRUN STATE_CHECK A B
set -euo pipefail
cohortrun=$1 check=$2 a=$3 b=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$cohortrun" -np "$a" "$check" resize-a "$dir"
"$cohortrun" -np "$b" "$check" resize-b "$dir"
