// The mutex, its scoped lock and the condition variable that Cohort's code uses instead of
// std::mutex, std::lock_guard and std::condition_variable: the same thing, annotated for clang's
// thread-safety analysis (base/thread_annotations.h), so that a member declared GUARDED_BY(mu_)
// and read without mu_ held fails the COHORT_THREAD_SAFETY build. No cost over the std types.
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_) = 0;
//   CondVar changed_;
//   ...
//   MutexLock lock(mu_);
//   changed_.wait(mu_, [&]() REQUIRES(mu_) { return count_ > 0; });
//
// A predicate is a lambda of its own to the analysis: it says REQUIRES(mu_) (the wait holds mu_
// whenever it calls it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace cohort {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // Tells the analysis that the caller holds this mutex (a callback run under it); no check.
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds `mutex` from its construction to its destruction; unlock() and lock() let go of it for a
// while within that scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  void lock() ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

// std::condition_variable on a Mutex that the caller holds (a MutexLock's): every wait lets go
// of it while it sleeps and holds it again when it returns, predicates are called with it held.
class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

  void wait(Mutex& mutex) REQUIRES(mutex) {
    std::unique_lock lock(mutex.mutex_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  template <typename Predicate>
  void wait(Mutex& mutex, Predicate ready) REQUIRES(mutex) {
    std::unique_lock lock(mutex.mutex_, std::adopt_lock);
    cv_.wait(lock, std::move(ready));
    lock.release();
  }
  // False if `ready` still returns false at `deadline`.
  template <typename Clock, typename Duration, typename Predicate>
  bool wait_until(Mutex& mutex, const std::chrono::time_point<Clock, Duration>& deadline,
                  Predicate ready) REQUIRES(mutex) {
    std::unique_lock lock(mutex.mutex_, std::adopt_lock);
    bool result = cv_.wait_until(lock, deadline, std::move(ready));
    lock.release();
    return result;
  }
  template <typename Rep, typename Period, typename Predicate>
  bool wait_for(Mutex& mutex, const std::chrono::duration<Rep, Period>& span, Predicate ready)
      REQUIRES(mutex) {
    return wait_until(mutex, std::chrono::steady_clock::now() + span, std::move(ready));
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(Mutex& mutex, const std::chrono::duration<Rep, Period>& span)
      REQUIRES(mutex) {
    return wait_until(mutex, std::chrono::steady_clock::now() + span);
  }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(Mutex& mutex, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mutex) {
    std::unique_lock lock(mutex.mutex_, std::adopt_lock);
    std::cv_status result = cv_.wait_until(lock, deadline);
    lock.release();
    return result;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace cohort
