// The shared completion state behind a Handle: set once by the background thread, read by users.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "cohort/types.h"

namespace cohort::detail {

// An error as data. A Handle never hands the background thread's exception object to another
// thread: wait() throws a new exception of the same type in the waiting thread.
struct ErrorRecord {
  enum class Kind {
    kNone,
    kError,
    kInvalidArgument,
    kNotInitialized,
    kMismatch,
    kInternal,
    kStall,
    kShutdown
  };
  Kind kind = Kind::kNone;
  std::string message;

  static ErrorRecord from(const std::exception_ptr& error);
  [[noreturn]] void raise() const;
};

struct HandleState {
  explicit HandleState(std::string n) : name(std::move(n)) {}

  // Completes the handle, with `err` if given; later calls change nothing.
  void complete(const std::exception_ptr& err = nullptr) {
    ErrorRecord record = err ? ErrorRecord::from(err) : ErrorRecord{};
    {
      MutexLock lock(mutex);
      if (done) return;
      error = std::move(record);
      done = true;
    }
    cv.notify_all();
  }

  const std::string name;
  Mutex mutex;
  CondVar cv;
  bool done GUARDED_BY(mutex) = false;
  ErrorRecord error GUARDED_BY(mutex);
  OwnedTensor output;                    // written by the background thread before complete()
  std::vector<int64_t> received_splits;  // alltoall, likewise
};

}  // namespace cohort::detail
