#!/usr/bin/env bash
# Builds the C++ API reference from the public headers with Doxygen (docs/Doxyfile) into OUT_DIR/html
# and fails if Doxygen warned about anything (an undocumented public name, a malformed comment).
# Usage: scripts/build-api-docs.sh OUT_DIR [VERSION]. Exits 77 (ctest's "skipped") when doxygen is
# not installed (scripts/install-deps.sh installs it).
set -euo pipefail
out=${1:?usage: scripts/build-api-docs.sh OUT_DIR [VERSION]}
version=${2:-}
cd "$(dirname "$0")/.."

if ! command -v doxygen >/dev/null; then
  echo "build-api-docs: doxygen is not installed; skipping (apt-get install doxygen)" >&2
  exit 77
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/warnings.log
rm -f "$log"
# The settings that depend on the build are appended; Doxygen takes the last value of a tag.
rc=0
{
  cat docs/Doxyfile
  echo "OUTPUT_DIRECTORY = \"$out\""
  echo "WARN_LOGFILE = \"$log\""
  echo "PROJECT_NUMBER = \"$version\""
} | timeout 120 doxygen - || rc=$?
if [[ -s $log ]]; then
  cat "$log" >&2
  echo "build-api-docs: doxygen reported $(wc -l <"$log") warning line(s), listed above" >&2
  exit 1
fi
if ((rc != 0)); then
  echo "build-api-docs: doxygen failed with status $rc" >&2
  exit 1
fi
echo "build-api-docs: $out/html/index.html"
