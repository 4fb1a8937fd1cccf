// Assertions for the multi-process check programs: each failure prints what failed on which rank
// and exits non-zero, so the launcher (cohortrun or mpirun) fails the whole test.
#pragma once

#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include "cohort/cohort.h"

namespace cohort::testing {

inline const char* g_program = "check";
inline int g_checks = 0;

[[noreturn]] inline void fail(const std::string& what) {
  int rank = cohort::is_initialized() ? cohort::rank() : -1;
  std::cerr << g_program << " FAILED on rank " << rank << ": " << what << std::endl;
  std::exit(1);
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
  ++g_checks;
}

// `call` must throw E with a message containing `fragment`.
template <typename E>
void expect_error(const std::function<void()>& call, const std::string& fragment,
                  const std::string& what) {
  try {
    call();
  } catch (const E& e) {
    check(std::string(e.what()).find(fragment) != std::string::npos,
          what + ": message '" + e.what() + "' lacks '" + fragment + "'");
    return;
  } catch (const std::exception& e) {
    fail(what + ": wrong exception: " + e.what());
  }
  fail(what + ": no error raised");
}

}  // namespace cohort::testing
