// A DeviceCopier (ops/device_copier.h) over plain memory, for testing the staged backend without a
// GPU: "device" and "pinned" memory are heap bytes, and the copies run on a thread of the copier's
// own in the order queued, as a CUDA stream runs them. In lazy mode a copy runs only once someone
// waits for a marker behind it, so a wait the backend forgot leaves the copy pending: busy() then
// reports the range it touches and the result comes out wrong, every time. Counts its live
// allocations so that tests see the staging freed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <thread>

#include "base/mutex.h"
#include "cohort/errors.h"
#include "ops/device_copier.h"

namespace cohort::ops::testing {

class HostCopier final : public DeviceCopier {
 public:
  explicit HostCopier(bool lazy = false) : lazy_(lazy), worker_([this] { run(); }) {}

  ~HostCopier() override {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
      released_ = queued_;  // finish what was queued, as a stream would
    }
    changed_.notify_all();
    worker_.join();
  }

  int device() const override { return 0; }
  std::shared_ptr<void> allocate_device(size_t bytes) override { return allocate(bytes); }
  std::shared_ptr<void> allocate_host(size_t bytes) override {
    ++host_allocations_;
    return allocate(bytes);
  }

  void to_host(void* host, const void* device, size_t bytes) override {
    queue(host, device, bytes);
  }
  void to_device(void* device, const void* host, size_t bytes) override {
    queue(device, host, bytes);
  }

  Marker mark() override {
    MutexLock lock(mutex_);
    return queued_;
  }

  void wait(Marker marker) override {
    MutexLock lock(mutex_);
    released_ = std::max(released_, marker);
    changed_.notify_all();
    if (!changed_.wait_for(mutex_, std::chrono::seconds(20),
                           [&]() REQUIRES(mutex_) { return done_ >= marker; })) {
      throw InternalError("host copier: copies did not finish within 20 s");
    }
  }

  void synchronize() override { wait(mark()); }

  std::unique_ptr<DeviceCopier> another() const override {
    return std::make_unique<HostCopier>(lazy_);
  }

  // Whether a queued copy that has not run yet reads or writes [p, p + bytes).
  bool busy(const void* p, size_t bytes) {
    MutexLock lock(mutex_);
    for (const Copy& c : pending_) {
      if (overlaps(c.to, c.bytes, p, bytes) || overlaps(c.from, c.bytes, p, bytes)) return true;
    }
    return false;
  }

  // Copies queued and not yet run.
  size_t in_flight() {
    MutexLock lock(mutex_);
    return pending_.size();
  }

  // Allocations of either kind still alive; how many staging allocations were made.
  int live() const { return *live_; }
  std::shared_ptr<const int> live_counter() const { return live_; }
  int host_allocations() const { return host_allocations_; }

 private:
  struct Copy {
    void* to;
    const void* from;
    size_t bytes;
  };

  static bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
    auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + b_bytes && y < x + a_bytes;
  }

  std::shared_ptr<void> allocate(size_t bytes) {
    if (bytes == 0) return nullptr;
    ++*live_;
    auto live = live_;
    return std::shared_ptr<void>(new std::byte[bytes], [live](void* p) {
      delete[] static_cast<std::byte*>(p);
      --*live;
    });
  }

  void queue(void* to, const void* from, size_t bytes) {
    if (bytes == 0) return;
    MutexLock lock(mutex_);
    pending_.push_back({to, from, bytes});
    ++queued_;
    changed_.notify_all();
  }

  void run() {
    MutexLock lock(mutex_);
    for (;;) {
      changed_.wait(mutex_, [&]() REQUIRES(mutex_) {
        return (done_ < queued_ && (!lazy_ || done_ < released_)) ||
               (stopping_ && done_ == queued_);
      });
      if (done_ == queued_) return;  // stopping with nothing left
      Copy c = pending_.front();
      lock.unlock();
      std::memcpy(c.to, c.from, c.bytes);
      lock.lock();
      pending_.pop_front();
      ++done_;
      changed_.notify_all();
    }
  }

  const bool lazy_;
  std::shared_ptr<int> live_ = std::make_shared<int>(0);
  int host_allocations_ = 0;
  Mutex mutex_;
  CondVar changed_;
  std::deque<Copy> pending_ GUARDED_BY(mutex_);  // the front one may be running
  Marker queued_ GUARDED_BY(mutex_) = 0;
  Marker done_ GUARDED_BY(mutex_) = 0;
  Marker released_ GUARDED_BY(mutex_) = 0;  // lazy mode: copies up to here may run
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread worker_;  // last: starts once the members above exist
};

}  // namespace cohort::ops::testing
