// Every Gloo failure becomes an InternalError that names the operation and the rank.
#pragma once

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <exception>
#include <string>

#include "cohort/errors.h"

namespace cohort::ops {

template <typename F>
void gloo_guard(const char* what, int rank, int size, F&& body) {
  auto fail = [&](const char* why) {
    throw InternalError(std::string("Gloo ") + what + " failed on rank " + std::to_string(rank) +
                        " of " + std::to_string(size) + ": " + why);
  };
  try {
    body();
  } catch (const Error&) {
    throw;  // Cohort's own, already precise
  } catch (const gloo::Exception& e) {
    fail(e.what());
  } catch (const gloo::EnforceNotMet& e) {
    fail(e.what());
  } catch (const std::exception& e) {
    // Anything else out of Gloo (std::system_error from a thread, bad_alloc) leaves the context in
    // an unknown state, so it ends the runtime like a broken connection does.
    fail(e.what());
  }
}

}  // namespace cohort::ops
