// Names for collectives submitted without one: "<kind>.noname.<n>", n counting the calls of that
// kind, as Horovod names them. The Runtime owns the counts, so they start again at 0 with every
// runtime: after an elastic reset the survivors and the workers that just joined count alike.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/mutex.h"

namespace cohort {

class DefaultNames {
 public:
  // The next name for `kind`; safe to call from any thread.
  std::string next(std::string_view kind) {
    MutexLock lock(mutex_);
    auto it = counts_.find(kind);
    if (it == counts_.end()) it = counts_.emplace(std::string(kind), 0).first;
    return std::string(kind) + ".noname." + std::to_string(it->second++);
  }

 private:
  Mutex mutex_;
  std::map<std::string, uint64_t, std::less<>> counts_ GUARDED_BY(mutex_);
};

}  // namespace cohort
