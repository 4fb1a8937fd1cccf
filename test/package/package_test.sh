#!/usr/bin/env bash
# Installs the build into a fresh prefix, builds test/package/hello against the installed tree the
# way an outside project would, and runs it alone (a world of one) and as 2 workers under the
# installed cohortrun. MODE find_package builds it with CMake and find_package(Cohort); MODE
# pkg_config compiles it with the flags of `pkg-config --cflags --libs cohort`; MODE
# find_package_torch builds test/package/hello_torch with find_package(Cohort COMPONENTS torch)
# (a build with libtorch only).
# Usage: package_test.sh MODE BUILD_DIR WORK_DIR HELLO_SOURCE_DIR (CXX and CMAKE_GENERATOR from the
# environment).
set -euo pipefail
mode=$1 build=$2 work=$3 hello=$4
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step() { echo "package_test ($mode): $*"; }

step "installing $build into $prefix"
timeout 120 cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/cohortrun include/cohort/cohort.h lib/cmake/Cohort/CohortConfig.cmake \
         lib/cmake/Cohort/CohortConfigVersion.cmake lib/pkgconfig/cohort.pc; do
  [[ -e $prefix/$f ]] || { echo "package_test: $prefix/$f was not installed" >&2; exit 1; }
done
if [[ $mode == find_package_torch ]]; then
  for f in lib/libcohort_torch.so include/cohort/torch.h include/cohort/torch/collectives.h \
           lib/cmake/Cohort/CohortTorchTargets.cmake; do
    [[ -e $prefix/$f ]] || { echo "package_test: $prefix/$f was not installed" >&2; exit 1; }
  done
fi
# The installed package must not point back into the source or build tree.
if grep -rlF -e "$build" -e "$(cd "$hello/../../.." && pwd)/" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  echo "package_test: the files above name the build or source tree" >&2
  exit 1
fi

case $mode in
  find_package | find_package_torch)
    step "configuring and building $hello with find_package(Cohort)"
    timeout 120 cmake -S "$hello" -B "$work/hello" -G "${CMAKE_GENERATOR:-Ninja}" \
      -DCMAKE_CXX_COMPILER="${CXX:-c++}" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/configure.log"
    timeout 300 cmake --build "$work/hello"
    app=$work/hello/hello_package
    ;;
  pkg_config)
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    flags=$(pkg-config --cflags --libs cohort)
    libdir=$(pkg-config --variable=libdir cohort)
    step "compiling with: ${CXX:-c++} -std=c++20 $flags"
    # $flags is a list of words by design.
    # shellcheck disable=SC2086
    timeout 300 "${CXX:-c++}" -std=c++20 -o "$work/hello_package" "$hello/hello_package.cc" \
      $flags -Wl,-rpath,"$libdir"
    app=$work/hello_package
    ;;
  *)
    echo "package_test: unknown mode '$mode' (find_package, pkg_config or find_package_torch)" >&2
    exit 2
    ;;
esac

# The program must load the installed library, not one from the build tree.
loaded=$(ldd "$app" | awk '/libcohort\.so/ {print $3}')
if [[ $(realpath "$loaded") != "$(realpath "$prefix")"/lib/* ]]; then
  echo "package_test: $app loads libcohort from '$loaded', not from $prefix/lib" >&2
  exit 1
fi
if [[ $mode == find_package_torch ]]; then
  loaded=$(ldd "$app" | awk '/libcohort_torch\.so/ {print $3}')
  if [[ $(realpath "$loaded") != "$(realpath "$prefix")"/lib/* ]]; then
    echo "package_test: $app loads libcohort_torch from '$loaded', not from $prefix/lib" >&2
    exit 1
  fi
fi

step "running $app alone"
timeout 60 "$app" | tee "$work/alone.out"
grep -q "rank 0 of 1 (none): sum 1, expected 1" "$work/alone.out"

step "running $app as 2 workers of the installed cohortrun"
timeout 120 "$prefix/bin/cohortrun" -np 2 "$app" | tee "$work/cohortrun.out"
[[ $(grep -c "of 2 (gloo): sum 3, expected 3" "$work/cohortrun.out") -eq 2 ]]

rm -rf "$work"
step "passed"
