#!/usr/bin/env bash
# Run HERE (Debian bookworm, with the network): downloads the Debian packages that the GPU image
# lacks into .gpu-deps/ at the repository root (git ignores it), the folder that travels to the GPU
# machine with the device tool's `carry` (scripts/gpu/README.md). Only .deb files travel (plain
# files; links might not survive the copy); scripts/gpu/unpack-deps.sh unpacks them there.
#   scripts/gpu/gather.sh [DEST]        (default: <repo>/.gpu-deps)
# Idempotent: a package already downloaded is kept. Prints the folder's size; fails above 48 MiB.
#
# What and why (the image: Ubuntu 24.04; docs in scripts/gpu/README.md):
#   libgloo0 libgloo-dev   Gloo (none in Ubuntu 24.04); libgloo.so.0 needs libhiredis.so.0.14
#                          (Ubuntu has only libhiredis1.1.0) and libibverbs.so.1 (with libnl),
#                          carried and used only where the image lacks them. Cohort includes none
#                          of Gloo's redis or ibverbs headers, so their -dev packages stay here.
#   libcereal-dev          cereal (header-only; Cohort uses its binary archives, not rapidjson's)
#   catch2                 Catch2 2.13: test/CMakeLists.txt asks for Catch2 2; the image has 3
#   libcli11-dev           CLI11 2.1.2, the version CI builds with (the image has another)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$root/.gpu-deps}
packages=(libgloo0 libgloo-dev libcereal-dev libhiredis0.14 libibverbs1 libnl-3-200
  libnl-route-3-200 catch2 libcli11-dev)
limit_mib=48

mkdir -p "$dest"
cd "$dest"
missing=()
for p in "${packages[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  # apt-get download writes into the current folder; as root it warns that _apt cannot write
  # there, which is harmless.
  apt-get download "${missing[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
fi
for p in "${packages[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || { echo "gather: $p was not downloaded" >&2; exit 1; }
done
printf '%s\n' "${packages[@]}" >packages.txt
size_kib=$(du -sk . | cut -f1)
echo "gather: ${#packages[@]} packages in $dest, $((size_kib / 1024)) MiB ($size_kib KiB)"
if ((size_kib > limit_mib * 1024)); then
  echo "gather: $dest is over $limit_mib MiB; it cannot travel" >&2
  exit 1
fi
