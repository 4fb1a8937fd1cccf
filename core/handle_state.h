// The shared completion state behind a Handle: set once by the background thread, read by users.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "cohort/types.h"

namespace cohort::detail {

struct HandleState {
  explicit HandleState(std::string n) : name(std::move(n)) {}

  void complete(std::exception_ptr err = nullptr) {
    {
      std::lock_guard lock(mutex);
      error = std::move(err);
      done = true;
    }
    cv.notify_all();
  }

  const std::string name;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  OwnedTensor output;  // written by the background thread before complete()
};

}  // namespace cohort::detail
