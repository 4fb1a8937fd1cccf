#include "agent/agent_watch.h"

#include <algorithm>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

// How long one watch request lasts before it is made again, from the revision watch_after gave:
// its watches (one per range) each deliver in order, but not in order with one another, so no
// later revision is known to hold every range's changes; the mirror skips what it holds.
constexpr std::chrono::seconds kWatchSpan{30};

}  // namespace

AgentWatch::AgentWatch(rendezvous::EtcdStoreOptions options, const Wakeup& wake)
    : store_(std::move(options)),
      wake_(wake),
      thread_([this] { loop(); }),
      watchdog_([this] { watchdog(); }) {}

AgentWatch::~AgentWatch() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    if (request_) request_->cancel("the agent is stopping");
  }
  cv_.notify_all();
  thread_.join();
  watchdog_.join();
}

void AgentWatch::watch_after(int64_t revision, KeyRanges ranges) {
  {
    MutexLock lock(mutex_);
    ++epoch_;
    from_ = revision;
    ranges_ = std::move(ranges);
    queued_.clear();
    lost_.reset();
    if (request_) request_->cancel("the agent read the job again");
  }
  cv_.notify_all();
}

AgentWatch::Taken AgentWatch::take() {
  MutexLock lock(mutex_);
  Taken taken{.lost = lost_};
  taken.changes.swap(queued_);
  return taken;
}

void AgentWatch::throw_if_failed() {
  MutexLock lock(mutex_);
  if (failure_) throw Error(*failure_);
}

void AgentWatch::loop() {
  MutexLock lock(mutex_);
  while (true) {
    cv_.wait(mutex_, [&]() REQUIRES(mutex_) { return stopping_ || (from_ >= 0 && !lost_); });
    if (stopping_ || failure_) return;
    int64_t from = from_;
    uint64_t epoch = epoch_;
    KeyRanges ranges = ranges_;
    auto request = std::make_shared<Cancellation>();
    request_ = request;
    unconfirmed_since_ = steady_now();
    created_ = 0;
    cv_.notify_all();  // the watchdog
    lock.unlock();
    follow(ranges, from, epoch, *request);
    lock.lock();
    request_.reset();
    unconfirmed_since_.reset();
  }
}

void AgentWatch::watchdog() {
  MutexLock lock(mutex_);
  while (!stopping_) {
    if (!unconfirmed_since_) {
      cv_.wait(mutex_, [&]() REQUIRES(mutex_) { return stopping_ || unconfirmed_since_; });
      continue;
    }
    auto within = kCreatedWithin * (1 << std::min(uncreated_, 2));
    TimePoint due = *unconfirmed_since_ + within;
    if (steady_now() < due) {
      cv_.wait_until(mutex_, due,
                     [&]() REQUIRES(mutex_) { return stopping_ || !unconfirmed_since_; });
      continue;
    }
    log::info("agent: etcd created ", created_, " of the ", ranges_.size(),
              " watches of the job within ", within.count(), " ms; watching again");
    ++uncreated_;
    if (request_) request_->cancel("etcd did not create every watch");
    unconfirmed_since_.reset();  // the next request starts its own count
  }
}

void AgentWatch::follow(const KeyRanges& ranges, int64_t from, uint64_t epoch,
                        const Cancellation& cancel) {
  try {
    store_.watch_changes(ranges, from, rendezvous::EtcdClient::Clock::now() + kWatchSpan, &cancel,
                         [&](const auto& batch) { return deliver(batch, from, epoch); });
  } catch (const rendezvous::StoreUnreachable& e) {
    MutexLock lock(mutex_);
    // Changes made while it was away may be lost with it (etcd restarted without its data): the
    // agent reads everything again, and reports the outage if that read fails too.
    if (!cancel.cancelled() && epoch == epoch_) lose(std::string("the watch broke: ") + e.what());
  } catch (const Error& e) {
    MutexLock lock(mutex_);
    if (cancel.cancelled()) return;  // ended on purpose
    failure_ = std::string("watching the job in etcd failed: ") + e.what();
    wake_.signal();  // the agent reads, and throw_if_failed() tells it
  }
}

bool AgentWatch::deliver(const rendezvous::EtcdStore::WatchBatch& batch, int64_t from,
                         uint64_t epoch) {
  MutexLock lock(mutex_);
  if (stopping_ || epoch != epoch_) return true;
  if (batch.compacted != 0) {
    lose("etcd compacted the job's history up to revision " + std::to_string(batch.compacted));
    return true;
  }
  if (batch.created && batch.revision < from) {
    lose("etcd's revision " + std::to_string(batch.revision) + " is below the " +
         std::to_string(from) + " this agent read: etcd lost its data");
    return true;
  }
  if (batch.created && ++created_ >= ranges_.size()) {
    unconfirmed_since_.reset();
    uncreated_ = 0;
    cv_.notify_all();
  }
  if (batch.changes.empty()) return false;
  queued_.insert(queued_.end(), batch.changes.begin(), batch.changes.end());
  wake_.signal();
  return false;
}

void AgentWatch::lose(const std::string& why) {
  lost_ = why;
  queued_.clear();
  wake_.signal();
}

}  // namespace cohort::discovery
