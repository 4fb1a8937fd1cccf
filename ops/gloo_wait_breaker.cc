#include "ops/gloo_wait_breaker.h"

#include <algorithm>
#include <chrono>

namespace cohort::ops {
namespace {

// How often the waits are woken again while a collective is still in flight after an abort. Only
// an aborted backend does this, and only until its collective notices.
constexpr std::chrono::milliseconds kBreakEvery{2};

}  // namespace

GlooWaitBreaker::InFlight::InFlight(GlooWaitBreaker& breaker) : breaker_(breaker) {
  MutexLock lock(breaker_.mutex_);
  ++breaker_.in_flight_;
}

GlooWaitBreaker::InFlight::~InFlight() {
  {
    MutexLock lock(breaker_.mutex_);
    --breaker_.in_flight_;
  }
  breaker_.ended_.notify_all();
}

GlooWaitBreaker::Watch::Watch(InFlight& in_flight,
                              std::initializer_list<gloo::transport::UnboundBuffer*> buffers)
    : breaker_(in_flight.breaker_), mine_(buffers) {
  MutexLock lock(breaker_.mutex_);
  for (auto* buffer : mine_) {
    breaker_.buffers_.push_back(buffer);
    if (breaker_.breaking_) {
      buffer->abortWaitSend();
      buffer->abortWaitRecv();
    }
  }
}

GlooWaitBreaker::Watch::~Watch() {
  MutexLock lock(breaker_.mutex_);
  auto& all = breaker_.buffers_;
  for (auto* buffer : mine_) all.erase(std::find(all.begin(), all.end(), buffer));
}

GlooWaitBreaker::~GlooWaitBreaker() {
  if (thread_.joinable()) thread_.join();
}

void GlooWaitBreaker::break_waits() {
  MutexLock lock(mutex_);
  if (breaking_) return;
  breaking_ = true;
  thread_ = std::thread([this] { keep_breaking(); });
}

void GlooWaitBreaker::keep_breaking() {
  MutexLock lock(mutex_);
  while (in_flight_ > 0) {
    for (auto* buffer : buffers_) {
      buffer->abortWaitSend();
      buffer->abortWaitRecv();
    }
    ended_.wait_for(mutex_, kBreakEvery);
  }
}

}  // namespace cohort::ops
