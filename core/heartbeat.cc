#include "core/heartbeat.h"

#include <algorithm>
#include <cstdio>

#include "base/log.h"
#include "base/wire.h"
#include "cohort/errors.h"

namespace cohort {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

enum class Kind : uint8_t { kBeat = 1, kGoodbye = 2, kFailed = 3 };

// How long a goodbye or failure notice may take to leave; a peer that cannot take it in time is
// frozen or gone and learns from the closed connection instead.
constexpr milliseconds kNoticeWait{100};

std::vector<std::byte> encode(Kind kind, const std::string& reason = {}) {
  wire::Writer w;
  w.u8(static_cast<uint8_t>(kind));
  if (kind == Kind::kFailed) w.str(reason);
  return std::move(w.bytes());
}

std::vector<int> ranks_to_watch(int rank, int size) {
  if (rank != 0) return {0};
  std::vector<int> ranks;
  for (int r = 1; r < size; ++r) ranks.push_back(r);
  return ranks;
}

std::string seconds_text(std::chrono::duration<double> d) {
  char text[32];
  std::snprintf(text, sizeof text, d.count() < 1 ? "%.2f" : "%.1f", d.count());
  return text;
}

}  // namespace

Heartbeat::Heartbeat(ControlChannel channel, int rank, int size, microseconds timeout,
                     OnFailure on_failure)
    : channel_(std::move(channel)),
      rank_(rank),
      timeout_(timeout),
      interval_(std::max<microseconds>(timeout / 4, microseconds(1))),
      on_failure_(std::move(on_failure)),
      beat_(encode(Kind::kBeat)),
      watched_(size, ranks_to_watch(rank, size), Clock::now()) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  stop();
}

void Heartbeat::stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mutex_);
    stop_requested_ = true;
  }
  channel_.wake();
  thread_.join();
}

void Heartbeat::fail(const std::string& reason) {
  {
    MutexLock lock(mutex_);
    if (!verdict_) verdict_ = reason;
    if (!local_failure_) local_failure_ = reason;
  }
  verdict_cv_.notify_all();
  channel_.wake();
}

std::optional<std::string> Heartbeat::verdict(milliseconds wait) {
  MutexLock lock(mutex_);
  // Not wait_for with no time: that still sleeps on a timer that has expired, which costs 70 to
  // 150 µs here, and the background thread asks before every cycle.
  if (wait.count() > 0) {
    verdict_cv_.wait_for(mutex_, wait, [&]() REQUIRES(mutex_) { return verdict_.has_value(); });
  }
  return verdict_;
}

bool Heartbeat::record_verdict(const std::string& verdict) {
  {
    MutexLock lock(mutex_);
    if (verdict_) return false;
    verdict_ = verdict;
  }
  verdict_cv_.notify_all();
  return true;
}

void Heartbeat::run() {
  try {
    beat();
    while (step()) {
    }
  } catch (const std::exception& e) {
    peer_failed(std::string("the heartbeat thread failed: ") + e.what());
  }
  channel_.close_peers();
}

bool Heartbeat::step() {
  std::vector<ControlMessage> messages;
  try {
    messages = channel_.wait(time_to_next_event());
  } catch (const InternalError& e) {
    peer_failed(e.what());  // a watched rank's connection closed or broke
    return false;
  }
  auto now = Clock::now();
  for (const auto& message : messages) {
    if (!handle(message.peer, message.payload, now)) return false;
  }
  {
    MutexLock lock(mutex_);
    if (local_failure_) {
      // "left", not "failed": the reason may be another rank's doing (a collective that cannot
      // complete because rank 0 shut down), and it names the rank at fault itself.
      std::string notice = (rank_ == 0 ? "rank 0 aborted the job: "
                                       : "rank " + std::to_string(rank_) + " left the job: ") +
                           *local_failure_;
      lock.unlock();
      send_to_all(encode(Kind::kFailed, notice));
      return false;
    }
    if (stop_requested_) {
      lock.unlock();
      send_to_all(encode(Kind::kGoodbye));
      return false;
    }
  }
  // Judged only now, after reading what arrived: a thread that woke late has read the beats that
  // waited for it before it judges anyone silent.
  if (auto silent = find_silent()) {
    peer_failed(*silent);
    return false;
  }
  if (Clock::now() >= next_beat_) beat();
  return true;
}

bool Heartbeat::handle(int peer, const std::vector<std::byte>& message, Clock::time_point now) {
  wire::Reader r(message);
  auto kind = static_cast<Kind>(r.u8());
  if (!watched_.watches(peer)) return true;
  switch (kind) {
    case Kind::kBeat:
      watched_.heard(peer, now);
      return true;
    case Kind::kGoodbye:
      channel_.drop(peer);
      watched_.forget(peer);
      return true;
    case Kind::kFailed:
      peer_failed(r.str());
      return false;
  }
  peer_failed("rank " + std::to_string(peer) + " sent an unknown heartbeat message");
  return false;
}

void Heartbeat::peer_failed(const std::string& reason) {
  bool first = record_verdict(reason);
  std::string verdict = *this->verdict();
  if (rank_ == 0) send_to_all(encode(Kind::kFailed, "rank 0 aborted the job: " + verdict));
  if (!first) return;  // this rank already failed by itself
  log::error(verdict);
  try {
    on_failure_(verdict);
  } catch (const std::exception& e) {
    log::error("reacting to a failed peer: ", e.what());
  }
}

void Heartbeat::beat() {
  watched_.for_each([&](int rank) {
    try {
      channel_.send(rank, beat_);
    } catch (const InternalError&) {
      // The next wait() reports the broken connection.
    }
  });
  next_beat_ = Clock::now() + interval_;
}

std::optional<std::string> Heartbeat::find_silent() const {
  auto w = watched_.oldest();
  if (!w) return std::nullopt;
  auto silence = Clock::now() - w->last_heard;
  if (silence < timeout_) return std::nullopt;
  std::string verdict = "rank " + std::to_string(w->rank) + " has sent no heartbeat for " +
                        seconds_text(silence) + " s (COHORT_PEER_TIMEOUT_SECONDS)";
  if (w->heard || w->rank != 0) return verdict + ": it is frozen, overloaded or cut off";
  // Rank 0 beats only once every rank's heartbeat connection is in: a late rank, not rank 0,
  // may be the one at fault.
  return verdict +
         " since the heartbeat connection opened: it is frozen, overloaded or cut off, or it "
         "is still waiting for another rank's heartbeat connection (see rank 0's log)";
}

microseconds Heartbeat::time_to_next_event() const {
  auto next = next_beat_;
  if (auto w = watched_.oldest()) next = std::min(next, w->last_heard + timeout_);
  auto left = std::chrono::duration_cast<microseconds>(next - Clock::now());
  return std::max(left, microseconds(0));
}

void Heartbeat::send_to_all(const std::vector<std::byte>& message) {
  watched_.for_each([&](int rank) {
    try {
      channel_.send(rank, message);
    } catch (const InternalError&) {
    }
  });
  try {
    channel_.flush(kNoticeWait);
  } catch (const InternalError&) {
    // Best effort: a peer that is gone or frozen learns from the closed connection.
  }
}

}  // namespace cohort
