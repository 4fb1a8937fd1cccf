// The thread that turns etcd's watch on a job's prefix into a readable eventfd, so that an agent's
// loop sleeps in one poll() on its workers' pipes, its signals and etcd together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "base/cancellation.h"
#include "base/mutex.h"
#include "launcher/wakeup.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

class AgentWatch {
 public:
  // Watches everything under `options.prefix` through a connection of its own; writes to
  // `wake` when something changed. Nothing is watched before watch_after(). `wake` must outlive
  // the watch.
  AgentWatch(rendezvous::EtcdStoreOptions options, const Wakeup& wake);
  ~AgentWatch();
  AgentWatch(const AgentWatch&) = delete;
  AgentWatch& operator=(const AgentWatch&) = delete;

  // Wake at the first change after `revision` (that of the caller's last read; lower than the
  // last one asked for when etcd restarted without its data).
  void watch_after(int64_t revision);

  // Throws Error naming what failed once watching failed for another reason than an etcd that
  // cannot be reached (which it waits out); the watch has stopped then.
  void throw_if_failed();

 private:
  void loop();

  rendezvous::EtcdStore store_;
  const Wakeup& wake_;
  Mutex mutex_;
  CondVar cv_;
  // The revision to watch after; -1: none asked for yet.
  int64_t wanted_ GUARDED_BY(mutex_) = -1;
  // The last revision after which a change was reported.
  int64_t woken_ GUARDED_BY(mutex_) = -1;
  bool stopping_ GUARDED_BY(mutex_) = false;
  // Why watching stopped, other than an outage.
  std::optional<std::string> failure_ GUARDED_BY(mutex_);
  Cancellation stop_;
  std::thread thread_;
};

}  // namespace cohort::discovery
