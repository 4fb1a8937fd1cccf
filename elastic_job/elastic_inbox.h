// What the workers have written to the launcher's rendezvous server since the launcher last
// looked. The server's on_set hook (on the server's thread) files the key of each check-in and
// reset report as a client sets it and wakes the launcher's poll() loop; the loop takes what was
// filed. A wake-up then costs the keys that arrived, not a lookup for every worker that has not
// checked in yet (a round of N workers: N lookups, not N per wake-up).
#pragma once

#include <string>
#include <vector>

#include "base/mutex.h"
#include "launcher/wakeup.h"

namespace cohort::discovery {

// A worker's key for one entry of the elastic protocol: checkin/<id>/<entry>, reset/<id>/<entry>.
struct WorkerEntry {
  int id = 0;
  int entry = 0;
};

struct Arrivals {
  std::vector<WorkerEntry> checkins;  // in the order they were set
  std::vector<WorkerEntry> resets;
};

class ElasticInbox {
 public:
  // Readable while something was filed and not taken (or the progress report changed).
  int fd() const { return wake_.fd(); }
  // Thread-safe. Files `key` (of the elastic scope) if it is a check-in or a reset report, and
  // wakes the loop for those and for the progress report; other keys are ignored.
  void file(const std::string& key);
  // Everything filed since the last call. Thread-safe.
  Arrivals take();

 private:
  Wakeup wake_;
  Mutex mutex_;
  Arrivals filed_ GUARDED_BY(mutex_);
};

}  // namespace cohort::discovery
