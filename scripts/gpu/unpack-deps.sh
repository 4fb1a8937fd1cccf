#!/usr/bin/env bash
# Unpacks the .deb files that scripts/gpu/gather.sh downloaded into a private prefix, never into
# the system, and makes them usable from there:
#   scripts/gpu/unpack-deps.sh DEBS_DIR PREFIX
# PREFIX/usr is then a CMake prefix (CMAKE_PREFIX_PATH). Debian's Gloo config names its library
# by the absolute path /usr/lib/libgloo.so.0.5.0; it is rewritten relative to the config's own
# place. Shared libraries whose soname the system already has (ldconfig) are left out of
# PREFIX/runtime-lib, the folder to put on LD_LIBRARY_PATH, so the image's own copies win.
# Idempotent: PREFIX is made afresh.
set -euo pipefail
debs=${1:?usage: unpack-deps.sh DEBS_DIR PREFIX}
prefix=${2:?usage: unpack-deps.sh DEBS_DIR PREFIX}
compgen -G "$debs/*.deb" >/dev/null || { echo "unpack-deps: no .deb in $debs" >&2; exit 1; }
rm -rf "$prefix"
mkdir -p "$prefix/runtime-lib"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$prefix"
done
gloo_targets=$(find "$prefix/usr" -path '*/cmake/Gloo/GlooTargets-*.cmake')
for f in $gloo_targets; do
  # shellcheck disable=SC2016  # ${_IMPORT_PREFIX} is CMake's, set by GlooTargets.cmake
  sed -i 's|"/usr/lib/|"${_IMPORT_PREFIX}/lib/|g' "$f"
done
# Every versioned name (libhiredis.so.0.14 is a soname too, not only libx.so.N) the system's
# loader does not know; a name no library asks for does no harm.
system_sonames=$(ldconfig -p | awk '{print $1}')
while IFS= read -r lib; do
  name=$(basename "$lib")
  grep -qxF "$name" <<<"$system_sonames" && continue
  ln -sf "$(readlink -f "$lib")" "$prefix/runtime-lib/$name"
done < <(find "$prefix/usr/lib" "$prefix/lib" -name '*.so.[0-9]*' 2>/dev/null || true)
echo "unpack-deps: $(ls "$debs"/*.deb | wc -l) packages in $prefix;" \
  "runtime-lib (names the loader lacks): $(ls "$prefix/runtime-lib" | tr "\n" " ")"
