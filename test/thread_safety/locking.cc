// Compiled, not run, by the COHORT_THREAD_SAFETY build (test/thread_safety/CMakeLists.txt): as is,
// it locks correctly and must compile; with MISTAKE_READ or MISTAKE_CALL defined it reads a
// guarded member, or calls a function that needs the lock, without the lock, and clang's
// -Wthread-safety must refuse it. Proves that the analysis is live for base/mutex.h.
#include "base/mutex.h"

namespace {

class Account {
 public:
  void deposit(int amount) {
    cohort::MutexLock lock(mutex_);
    add(amount);
    changed_.notify_all();
  }

  int wait_for_funds() {
    cohort::MutexLock lock(mutex_);
    changed_.wait(mutex_, [&]() REQUIRES(mutex_) { return balance_ > 0; });
    return balance_;
  }

#if defined(MISTAKE_READ)
  int peek() const {
    return balance_;
  }
#elif defined(MISTAKE_CALL)
  void sneak(int amount) {
    add(amount);
  }
#endif

 private:
  void add(int amount) REQUIRES(mutex_) {
    balance_ += amount;
  }

  mutable cohort::Mutex mutex_;
  cohort::CondVar changed_;
  int balance_ GUARDED_BY(mutex_) = 0;
};

}  // namespace

int use_account() {
  Account a;
  a.deposit(1);
  return a.wait_for_funds();
}
