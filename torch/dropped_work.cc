// One background thread per process, started by the first dropped Work, waits for each dropped
// collective in turn and then releases its tensors. Every wait ends: the runtime completes each
// collective, fails it after its timeout, or fails it at shutdown.
#include "dropped_work.h"

#include <deque>
#include <thread>
#include <utility>

#include "base/mutex.h"

namespace cohort::torch::detail {

namespace {

class Reaper {
 public:
  void add(DroppedWork work) {
    {
      MutexLock lock(mutex_);
      queue_.push_back(std::move(work));
      if (!started_) {
        // Detached: the thread may still wait when the process exits, and nothing joins it.
        std::thread([this] { run(); }).detach();
        started_ = true;
      }
    }
    cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      DroppedWork work;
      {
        MutexLock lock(mutex_);
        cv_.wait(mutex_, [this]() REQUIRES(mutex_) { return !queue_.empty(); });
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        work.handle.wait();
      } catch (...) {
        // No one is left to receive the error; the runtime has logged or counted it.
      }
      // `work` goes here: its tensors are released without the lock.
    }
  }

  Mutex mutex_;
  CondVar cv_;  // signalled when queue_ gets a work
  // Dropped Works whose collective may still run.
  std::deque<DroppedWork> queue_ GUARDED_BY(mutex_);
  bool started_ GUARDED_BY(mutex_) = false;  // whether run() has a thread
};

// Never destroyed: its detached thread may outlive static destruction at exit.
Reaper& reaper() {
  static Reaper* instance = new Reaper();
  return *instance;
}

}  // namespace

void keep_until_done(DroppedWork work) {
  reaper().add(std::move(work));
}

}  // namespace cohort::torch::detail
