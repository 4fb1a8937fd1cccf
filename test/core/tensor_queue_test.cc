#include <catch2/catch.hpp>

#include "base/mutex.h"
#include "cohort/errors.h"
#include "core/tensor_queue.h"

using namespace cohort;

namespace {
TensorEntry entry(std::string name) {
  return {Request{.name = name}, {}, {}, std::make_shared<detail::HandleState>(name)};
}
}  // namespace

TEST_CASE("a name can be in flight only once") {
  int wakes = 0;
  TensorQueue q([&] { ++wakes; });
  q.add(entry("a"));
  CHECK_THROWS_WITH(q.add(entry("a")), Catch::Matchers::Contains("already in flight"));
  CHECK(wakes == 1);
  q.add(entry("b"));  // the thread has not taken "a" yet: no second wake
  CHECK(wakes == 1);
  CHECK(q.take_new_requests().size() == 2);
  CHECK(q.take_new_requests().empty());
  q.add(entry("c"));  // after a take, the next add wakes again
  CHECK(wakes == 2);
  TensorEntry a = q.take("a");
  REQUIRE(a.handle);
  CHECK_FALSE(q.take("a").handle);
  q.add(entry("a"));  // free again once taken
}

TEST_CASE("closing fails pending entries and later submissions") {
  TensorQueue q([] {});
  auto e = entry("x");
  auto handle = e.handle;
  q.add(std::move(e));
  q.close(std::make_exception_ptr(InternalError("peer died")));
  {
    MutexLock lock(handle->mutex);
    CHECK(handle->done);
    CHECK_THROWS_AS(handle->error.raise(), InternalError);
    CHECK_THROWS_WITH(handle->error.raise(), "peer died");
  }
  CHECK_THROWS_WITH(q.add(entry("y")), "peer died");
}

TEST_CASE("a single request with nothing else in flight is alone, a burst's is not") {
  TensorQueue q([] {});
  CHECK_FALSE(q.new_request_arrivals());
  q.add(entry("a"));
  CHECK(q.new_request_arrivals()->alone);
  q.add(entry("b"));  // a burst has begun
  CHECK_FALSE(q.new_request_arrivals()->alone);
  q.take_new_requests();
  q.take("a");
  q.add(entry("c"));  // "b" is still in flight: its step may bring more
  CHECK_FALSE(q.new_request_arrivals()->alone);
  q.take_new_requests();
  q.take("b");
  q.take("c");
  q.add(entry("d"));
  CHECK(q.new_request_arrivals()->alone);
}
