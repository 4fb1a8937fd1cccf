#include "agent/agent_watch.h"

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

// How long one watch request lasts before it is made again; how long after a failed one.
constexpr std::chrono::seconds kWatchSpan{30};
constexpr std::chrono::milliseconds kRetryAfter{500};

}  // namespace

AgentWatch::AgentWatch(rendezvous::EtcdStoreOptions options, const Wakeup& wake)
    : store_(std::move(options)), wake_(wake), thread_([this] { loop(); }) {}

AgentWatch::~AgentWatch() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  stop_.cancel("the agent is stopping");
  thread_.join();
}

void AgentWatch::watch_after(int64_t revision) {
  {
    MutexLock lock(mutex_);
    if (revision == wanted_) return;
    // Lower than before: etcd lost its data and counts anew (the watch in flight died with it).
    if (revision < wanted_) woken_ = -1;
    wanted_ = revision;
  }
  cv_.notify_all();
}

void AgentWatch::throw_if_failed() {
  MutexLock lock(mutex_);
  if (failure_) throw Error(*failure_);
}

void AgentWatch::loop() {
  MutexLock lock(mutex_);
  while (true) {
    cv_.wait(mutex_, [&]() REQUIRES(mutex_) { return stopping_ || wanted_ > woken_; });
    if (stopping_) return;
    int64_t revision = wanted_;
    lock.unlock();
    bool changed = false;
    try {
      changed = store_.wait_for_change("", revision, kWatchSpan, &stop_);
    } catch (const rendezvous::StoreUnreachable& e) {
      if (stop_.cancelled()) return;
      // etcd unreachable: the agent's loop reads again (and reports) when woken, then asks again.
      log::limited(log::Level::kWarning, "agent-watch",
                   "agent: watching the job failed: ", e.what());
      changed = true;
      lock.lock();
      if (cv_.wait_for(mutex_, kRetryAfter, [&]() REQUIRES(mutex_) { return stopping_; })) return;
      lock.unlock();
    } catch (const Error& e) {
      if (stop_.cancelled()) return;
      lock.lock();
      failure_ = std::string("watching the job in etcd failed: ") + e.what();
      wake_.signal();  // the agent reads, and throw_if_failed() tells it
      return;
    }
    lock.lock();
    if (changed) {
      woken_ = revision;
      wake_.signal();
    }
  }
}

}  // namespace cohort::discovery
