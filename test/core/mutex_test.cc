// base/mutex.h: the annotated Mutex, MutexLock and CondVar behave as std::mutex, std::unique_lock
// and std::condition_variable do (their annotations are checked by test/thread_safety).
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/mutex.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

struct Counter {
  Mutex mutex;
  CondVar changed;
  int value GUARDED_BY(mutex) = 0;
};

}  // namespace

TEST_CASE("mutex: a wait returns once another thread changed what it waits for") {
  Counter c;
  std::thread other([&] {
    {
      MutexLock lock(c.mutex);
      c.value = 3;
    }
    c.changed.notify_all();
  });
  MutexLock lock(c.mutex);
  c.changed.wait(c.mutex, [&]() REQUIRES(c.mutex) { return c.value == 3; });
  CHECK(c.value == 3);
  lock.unlock();
  other.join();
}

TEST_CASE("mutex: a timed wait says whether it saw the change") {
  Counter c;
  MutexLock lock(c.mutex);
  CHECK_FALSE(c.changed.wait_for(c.mutex, 10ms, [&]() REQUIRES(c.mutex) { return c.value > 0; }));
  c.value = 1;
  CHECK(c.changed.wait_for(c.mutex, 10ms, [&]() REQUIRES(c.mutex) { return c.value > 0; }));
  CHECK(c.changed.wait_for(c.mutex, 1ms) == std::cv_status::timeout);
}

TEST_CASE("mutex: a lock let go within its scope is held again and released once") {
  Counter c;
  {
    MutexLock lock(c.mutex);
    lock.unlock();
    if (c.mutex.try_lock()) {
      c.mutex.unlock();
    } else {
      FAIL("held while let go");
    }
    lock.lock();
    c.value = 2;
  }
  if (c.mutex.try_lock()) {  // released by the scope's end, once
    CHECK(c.value == 2);
    c.mutex.unlock();
  } else {
    FAIL("still held after the scope");
  }
}
