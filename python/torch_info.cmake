# What an interpreter's torch is: the one place both build routes ask it. The pip route
# (scikit-build-core, SKBUILD) finds libtorch through it; both routes record its version and C++ ABI
# in the generated module cohort/_build_info.py, which `import cohort` checks against the torch it
# imports (python/cohort/_torch_check.py).
#
# `-I` (isolated mode) ignores PYTHONPATH and user site-packages: under pip's build isolation it
# drops pip's overlay (which hides the target environment's site-packages) so the target's torch is
# the one found, and a stray PYTHONPATH cannot substitute another.

# cohort_query_torch(PYTHON): sets in the caller's scope, or fails naming what went wrong,
#   COHORT_PYTORCH_VERSION      torch.__version__, e.g. 2.15.0+cu132 or 1.13.0a0
#   COHORT_PYTORCH_CXX11_ABI    1 or 0: torch._C._GLIBCXX_USE_CXX11_ABI
#   COHORT_PYTORCH_DIR          the torch package's directory (its lib/ and share/cmake)
function(cohort_query_torch python)
  execute_process(
    COMMAND ${python} -I -c
      "import os, torch; print(torch.__version__); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "Cohort: `${python} -I -c 'import torch'` failed (${rc}): ${err}\n"
      "Install torch into that environment first (pip install torch); the package is built "
      "against the torch of the environment it is installed into.")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  list(GET lines -3 version)
  list(GET lines -2 abi)
  list(GET lines -1 dir)
  set(COHORT_PYTORCH_VERSION ${version} PARENT_SCOPE)
  set(COHORT_PYTORCH_CXX11_ABI ${abi} PARENT_SCOPE)
  set(COHORT_PYTORCH_DIR ${dir} PARENT_SCOPE)
endfunction()

# cohort_find_torch_of_python(PYTHON): the pip route's find_package(Torch), against the torch that
# PYTHON imports. Its directory goes first on CMAKE_PREFIX_PATH, so that libtorch and libc10 are
# found in torch/lib before any system libtorch (TorchConfig searches the system before its own
# PATHS). Refuses a torch built with the old C++ ABI: Cohort links Debian's Gloo, built with the
# new one.
macro(cohort_find_torch_of_python python)
  cohort_query_torch(${python})
  if(NOT COHORT_PYTORCH_CXX11_ABI)
    message(FATAL_ERROR "Cohort: torch ${COHORT_PYTORCH_VERSION} (${COHORT_PYTORCH_DIR}) was "
      "built with the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0), but Cohort links the system's Gloo "
      "and MPI, built with the C++11 ABI; use a torch built with it (PyPI's since 2.7, Debian's).")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH ${COHORT_PYTORCH_DIR} ${COHORT_PYTORCH_DIR}/share/cmake)
  # TORCH_CUDA_ARCH_LIST: CMakeLists.txt sets it before find_package(Torch), for both routes.
  message(STATUS "Cohort: building against torch ${COHORT_PYTORCH_VERSION} of ${python} "
                 "(${COHORT_PYTORCH_DIR})")
endmacro()
