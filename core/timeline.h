// An optional Chrome-trace timeline (COHORT_TIMELINE=path), written by rank 0: per tensor, the
// negotiation (from the first rank's request to the last, with a mark as each rank's arrives) and
// the execution, in Perfetto's or chrome://tracing's JSON array format.
//
// Each event is one write(2) of a whole JSON object followed by ",\n", so a process killed at any
// moment leaves a file of complete events; the array's closing "]" is optional in this format
// (and written by the destructor). The file is made as base/safe_write.h says: a new file of a
// fresh name in the path's directory, renamed over the path as soon as it holds "[", then written
// through its descriptor; whatever lies at the path is replaced, never followed or truncated, and
// a link, a FIFO, a device or a directory there is refused at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/fd.h"

namespace cohort {

class Timeline {
 public:
  Timeline() = default;  // disabled: every call does nothing
  // Creates `path`, or replaces the regular file there; throws InvalidArgument naming the path
  // if it cannot, or when the path is not a regular file.
  explicit Timeline(const std::string& path);
  Timeline(Timeline&&) = default;
  Timeline& operator=(Timeline&&) = default;
  ~Timeline();

  bool enabled() const { return fd_.valid(); }

  void negotiation_started(const std::string& tensor, std::string_view op);
  void rank_ready(const std::string& tensor, int rank);
  void negotiation_ended(const std::string& tensor);
  void execution_started(const std::string& tensor, std::string_view op, size_t bytes);
  void execution_ended(const std::string& tensor, std::string_view outcome);

 private:
  int64_t now_us() const;
  // The trace row ("thread") of a tensor, announced with its name the first time it appears.
  int row(const std::string& tensor);
  void emit(const std::string& json);

  Fd fd_;
  std::chrono::steady_clock::time_point start_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace cohort
