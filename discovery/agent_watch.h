// The thread that turns etcd's watch on a job's prefix into a readable eventfd, so that an agent's
// loop sleeps in one poll() on its workers' pipes, its signals and etcd together.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "base/cancellation.h"
#include "discovery/wakeup.h"
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

 private:
  void loop();

  rendezvous::EtcdStore store_;
  const Wakeup& wake_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int64_t wanted_ = -1;  // the revision to watch after; -1: none asked for yet
  int64_t woken_ = -1;   // the last revision after which a change was reported
  bool stopping_ = false;
  Cancellation stop_;
  std::thread thread_;
};

}  // namespace cohort::discovery
