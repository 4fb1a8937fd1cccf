#!/usr/bin/env bash
# scripts/gpu/gather.sh gathers all the GPU image lacks: downloads the packages (skipped, exit 77,
# when the Debian mirror cannot be reached), unpacks them (scripts/gpu/unpack-deps.sh) and
# configures and builds a small program against that prefix alone (the system's packages hidden
# from find_package): Gloo, cereal, Catch2 2 and CLI11 as Cohort asks for them; and on a bare
# image (no library known to ldconfig) the libraries Gloo needs come from the prefix.
#   gather_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=${1:?usage: gather_test.sh SOURCE_DIR WORK_DIR}
work=${2:?usage: gather_test.sh SOURCE_DIR WORK_DIR}
mkdir -p "$work"
if ! log=$(bash "$src/scripts/gpu/gather.sh" "$work/debs" 2>&1); then
  if grep -qiE "could not resolve|failed to fetch|temporary failure|unable to connect" <<<"$log"; then
    echo "skipped: the Debian mirror cannot be reached ($(grep -m1 -iE 'resolve|fetch|connect' <<<"$log"))"
    exit 77
  fi
  echo "$log"; echo "FAIL: gather.sh"; exit 1
fi
echo "$log" | tail -1
bash "$src/scripts/gpu/unpack-deps.sh" "$work/debs" "$work/prefix" || { echo "FAIL: unpack"; exit 1; }

mkdir -p "$work/probe"
cat >"$work/probe/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(gather_probe CXX)
set(CMAKE_CXX_STANDARD 20)
# Only the prefix: neither CMake's system paths nor PATH-derived ones (after project(), which
# must still find the compiler).
set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH OFF)
set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH OFF)
find_package(Gloo CONFIG REQUIRED)
find_package(cereal CONFIG REQUIRED)
find_package(Catch2 2 CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
foreach(dir Gloo_DIR cereal_DIR Catch2_DIR CLI11_DIR)
  message(STATUS "probe: ${dir}=${${dir}}")
endforeach()
add_executable(probe probe.cc)
target_link_libraries(probe PRIVATE gloo cereal::cereal Catch2::Catch2 CLI11::CLI11)
CMAKE
cat >"$work/probe/probe.cc" <<'CC'
#include <CLI/CLI.hpp>
#include <cereal/archives/binary.hpp>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
int main() {
  gloo::rendezvous::HashStore store;
  gloo::transport::tcp::attr attr;
  attr.hostname = "localhost";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  return device ? 0 : 1;
}
CC
if ! cmake -S "$work/probe" -B "$work/probe/build" -DCMAKE_PREFIX_PATH="$work/prefix/usr" \
    >"$work/configure.log" 2>&1; then
  cat "$work/configure.log"; echo "FAIL: configure against the gathered prefix only"; exit 1
fi
bad=$(grep '^-- probe: ' "$work/configure.log" | grep -v "=$work/prefix/")
[[ -z $bad ]] || { echo "$bad"; echo "FAIL: found outside the prefix"; exit 1; }
cmake --build "$work/probe/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
LD_LIBRARY_PATH="$work/prefix/runtime-lib" "$work/probe/build/probe" || { echo "FAIL: run"; exit 1; }
# ldd's whole output first: `ldd | grep -q` under pipefail fails whenever grep, having matched,
# exits before ldd has written its last line (ldd then dies of SIGPIPE).
deps=$(ldd "$work/probe/build/probe")
grep -q "$work/prefix/usr/lib/libgloo.so" <<<"$deps" ||
  { echo "$deps"; echo "FAIL: probe does not load the gathered libgloo"; exit 1; }

# A bare image (an ldconfig that knows no library): every library Gloo needs that the packages
# hold must then be loaded from the prefix's runtime-lib (libhiredis.so.0.14 among them).
mkdir -p "$work/shim"
printf '#!/bin/sh\nexit 0\n' >"$work/shim/ldconfig"
chmod +x "$work/shim/ldconfig"
PATH=$work/shim:$PATH bash "$src/scripts/gpu/unpack-deps.sh" "$work/debs" "$work/bare" >/dev/null ||
  { echo "FAIL: unpack for a bare image"; exit 1; }
checked=0
while read -r name _ path _; do
  [[ -n $(find "$work/bare/usr" "$work/bare/lib" -name "$name" 2>/dev/null) ]] || continue
  [[ $path == "$work/bare/runtime-lib/"* ]] ||
    { echo "FAIL: on a bare image $name would come from $path"; exit 1; }
  checked=$((checked + 1))
done < <(LD_LIBRARY_PATH="$work/bare/runtime-lib" ldd "$work/bare/usr/lib/libgloo.so.0" | grep '=>')
((checked >= 4)) || { echo "FAIL: only $checked of Gloo's libraries come from the packages"; exit 1; }
echo "PASS (gathered Gloo, cereal, Catch2 2, CLI11 configure, build and run; on a bare image" \
  "$checked libraries of Gloo's come from the prefix)"
