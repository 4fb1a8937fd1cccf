#!/usr/bin/env bash
# Runs a command with a fresh temporary directory as its last argument, then removes it.
# Usage: with_temp_dir.sh COMMAND [ARGS...]
set -uo pipefail
dir=$(mktemp -d)
"$@" "$dir"
rc=$?
rm -rf "$dir"
exit $rc
