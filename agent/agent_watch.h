// The thread that follows etcd's watches on a job's keys for an agent: one long watch request
// (one watch per key range the agent reads, agent_ranges.h, all on one stream) from the revision
// of the agent's last full read, whose changes (values checked as a read checks
// them) it queues for the agent's mirror (agent_mirror.h) and announces on an eventfd, so that an
// agent's loop sleeps in one poll() on its workers' pipes, its signals and etcd together. When the
// watch cannot deliver every change in order (etcd compacted the history, restarted without its
// data, or could not be reached), it says why and stops until the agent has read everything again.
// etcd (3.4's HTTP gateway, under load) may leave the last watches of a request uncreated: each
// watch answers "created", and a request whose watches have not all answered within
// kCreatedWithin is made again (a watchdog thread), so that no range goes unwatched until the
// agent's next full read a lease TTL later; twice as long after each request made again for this,
// up to 4 times as long, so that an etcd too busy to answer in time is not asked more and more.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_ranges.h"
#include "base/cancellation.h"
#include "base/mutex.h"
#include "launcher/clock.h"
#include "launcher/wakeup.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// How long a watch request's watches may take to answer "created" before it is made again.
inline constexpr std::chrono::milliseconds kCreatedWithin{2000};

class AgentWatch {
 public:
  // Watches keys under `options.prefix` through a connection of its own; writes to
  // `wake` when it has something to take(). Nothing is watched before watch_after(). `wake` must
  // outlive the watch.
  AgentWatch(rendezvous::EtcdStoreOptions options, const Wakeup& wake);
  ~AgentWatch();
  AgentWatch(const AgentWatch&) = delete;
  AgentWatch& operator=(const AgentWatch&) = delete;

  // Delivers every change in `ranges` after `revision`, that of the caller's full read of them,
  // from now on: what was queued or lost before is forgotten, and a watch in flight is ended.
  void watch_after(int64_t revision, KeyRanges ranges);

  struct Taken {
    std::vector<rendezvous::EtcdStore::Change> changes;  // in revision order
    // Set: the changes stopped here, and the caller must read everything again (and then call
    // watch_after) because of this.
    std::optional<std::string> lost;
  };
  // What the watch delivered since the last take(), all of it at once.
  Taken take();

  // Throws Error naming what failed once watching failed for another reason than an etcd that
  // cannot be reached or a history that is gone; the watch has stopped then.
  void throw_if_failed();

 private:
  void loop();
  // Ends a request whose watches did not all answer "created" within kCreatedWithin.
  void watchdog();
  // Follows one watch request from `revision` (for watch_after's `epoch`) until it ends.
  void follow(const KeyRanges& ranges, int64_t revision, uint64_t epoch,
              const Cancellation& cancel);
  // Queues `batch` of the watch for `epoch`; true when the watch must end.
  bool deliver(const rendezvous::EtcdStore::WatchBatch& batch, int64_t from, uint64_t epoch);
  // Stops delivering until the next watch_after, for `why`.
  void lose(const std::string& why) REQUIRES(mutex_);

  rendezvous::EtcdStore store_;
  const Wakeup& wake_;
  Mutex mutex_;
  CondVar cv_;
  uint64_t epoch_ GUARDED_BY(mutex_) = 0;  // watch_after calls so far
  // The revision watch_after gave for this epoch: every request watches from there; -1: none.
  int64_t from_ GUARDED_BY(mutex_) = -1;
  KeyRanges ranges_ GUARDED_BY(mutex_);  // watch_after's
  std::vector<rendezvous::EtcdStore::Change> queued_ GUARDED_BY(mutex_);
  std::optional<std::string> lost_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  // Why watching stopped, other than an outage.
  std::optional<std::string> failure_ GUARDED_BY(mutex_);
  // Ends the watch request in flight (watch_after, the destructor, the watchdog).
  std::shared_ptr<Cancellation> request_ GUARDED_BY(mutex_);
  // The request in flight: when it was made, if not all of its watches answered "created" yet,
  // and how many did.
  std::optional<TimePoint> unconfirmed_since_ GUARDED_BY(mutex_);
  size_t created_ GUARDED_BY(mutex_) = 0;
  int uncreated_ GUARDED_BY(mutex_) = 0;  // requests made again in a row for want of "created"
  Cancellation stop_;
  std::thread thread_;
  std::thread watchdog_;
};

}  // namespace cohort::discovery
