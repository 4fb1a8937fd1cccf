// elastic::run outside elastic mode (a world of one started without a launcher): it syncs, runs
// the function once, lets InternalError propagate (there is no launcher to recover through), and
// its host-update check communicates nothing.
#include <catch2/catch.hpp>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"

using namespace cohort;
using namespace cohort::elastic;

namespace {

struct LoneWorld {
  LoneWorld() { init(); }
  ~LoneWorld() { shutdown(); }
};

}  // namespace

TEST_CASE("outside elastic mode run syncs and runs the function once") {
  LoneWorld world;
  CHECK_FALSE(is_elastic());
  State state;
  std::vector<float> weights(4, 1.0f);
  state.track("weights", weights);
  int calls = 0;
  run(state, [&](State& s) {
    ++calls;
    CHECK(s.has_commit());  // the sync before fn is a commit to restore to
    weights.assign(4, 2.0f);
    s.commit();  // the commit hook (check_host_updates) returns at once
  });
  CHECK(calls == 1);
  CHECK(state.commit_count() == 1);
  CHECK(resets() == 0);
  CHECK(last_reset_timings().new_size == 0);
}

TEST_CASE("outside elastic mode an InternalError propagates and nothing is reset") {
  LoneWorld world;
  State state;
  int epoch = 0;
  state.track("epoch", epoch);
  int calls = 0;
  CHECK_THROWS_AS(run(state,
                      [&](State&) {
                        ++calls;
                        throw InternalError("a peer died");
                      }),
                  InternalError);
  CHECK_THROWS_AS(run(state, [&](State&) { throw HostsUpdatedInterrupt("hosts"); }),
                  HostsUpdatedInterrupt);
  CHECK(calls == 1);
  CHECK(resets() == 0);
}

TEST_CASE("other exceptions propagate and the commit hook is removed when run returns") {
  LoneWorld world;
  State state;
  std::vector<int32_t> counter(1, 0);
  state.track("counter", counter);
  CHECK_THROWS_AS(run(state, [](State&) { throw std::logic_error("bug"); }), std::logic_error);
  bool hook_ran = false;
  state.set_commit_hook([&] { hook_ran = true; });
  run(state, [](State& s) { s.commit(); });
  CHECK_FALSE(hook_ran);  // run replaced it while it ran ...
  state.commit();
  CHECK_FALSE(hook_ran);  // ... and removed it on return
}

TEST_CASE("without init the elastic queries say so") {
  CHECK_THROWS_AS(is_elastic(), NotInitialized);
  CHECK_THROWS_AS(resets(), NotInitialized);
  CHECK_THROWS_AS(check_host_updates(), NotInitialized);
  State state;
  CHECK_THROWS_AS(run(state, [](State&) {}), NotInitialized);
}
