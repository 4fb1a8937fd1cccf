// Runs under cohortrun or mpirun with 2-4 ranks and checks a State's sharded values across real
// processes, in one world (the elastic scenarios, test/scenarios/sharded_scenarios.sh, change
// the world): commit, restore and sync of the ranges, and the bad inputs that must fail on every
// rank alike with nothing changed. Exits non-zero on the first failure, naming it.
//   shard_check
#include <iostream>

#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"
#include "cohort/elastic/sharded.h"
#include "cohort/elastic/state.h"
#include "test/integration/check.h"

using namespace cohort;
using namespace cohort::elastic;
using cohort::testing::check;
using cohort::testing::expect_error;

namespace {

// Element g of the buffer at `version`.
float value(uint64_t g, int version) {
  return static_cast<float>(g * 3 + static_cast<uint64_t>(version));
}

void fill(ShardedBuffer<float>& b, int version) {
  for (uint64_t g = b.range().begin; g < b.range().end; ++g) {
    b.local()[g - b.range().begin] = value(g, version);
  }
}

bool holds(const ShardedBuffer<float>& b, int version) {
  for (uint64_t g = b.range().begin; g < b.range().end; ++g) {
    if (b.local()[g - b.range().begin] != value(g, version)) return false;
  }
  return true;
}

void check_commit_restore_sync() {
  ShardedBuffer<float> b(1001);
  check(b.range() == shard_range(1001, cohort::rank(), cohort::size()), "the range at creation");
  State state("shards");
  state.track("b", b);
  fill(b, 1);
  state.sync();  // before any commit: the live ranges are the first commit
  check(holds(b, 1) && state.has_commit(), "the first sync keeps every rank's live range");
  fill(b, 2);
  state.commit();
  fill(b, 3);
  state.restore();
  check(holds(b, 2), "restore returns this rank's range to the commit");
  fill(b, 4);
  state.restore();
  state.sync();  // the same world: nothing travels, every range as committed
  check(holds(b, 2), "a sync in the same world keeps the committed ranges");
  check(state.commit_count() == 1, "sync keeps the commit count");
}

void check_bad_input() {
  int r = cohort::rank();
  expect_error<InvalidArgument>([] { ShardedBuffer<float> empty(0); }, "needs elements",
                                "a sharded buffer of no elements");
  {  // ranks that disagree on the length: sync and commit fail on every rank alike
    ShardedBuffer<float> b(r == 1 ? 101 : 100);
    fill(b, 1);
    State state("length");
    state.track("b", b);
    expect_error<MismatchError>([&] { state.sync(); },
                                "sharded value 'b' has 101 elements of float32 on rank 1 and 100 "
                                "elements of float32 on rank 0",
                                "sync of sharded values of different lengths");
    expect_error<MismatchError>([&] { state.commit(); },
                                "rank 1 tracks the sharded values 'b' (float32, 101 elements), "
                                "rank 0 'b' (float32, 100 elements)",
                                "commit of sharded values of different lengths");
    check(holds(b, 1) && !state.has_commit(), "a refused sync or commit changes nothing");
  }
  {  // ... or on the type
    ShardedBuffer<float> f(100);
    ShardedBuffer<double> d(100);
    State state("type");
    if (r == 1) {
      state.track("b", d);
    } else {
      state.track("b", f);
    }
    expect_error<MismatchError>([&] { state.sync(); }, "has 100 elements of float64 on rank 1",
                                "sync of sharded values of different types");
  }
  {  // checkpoints refuse sharded values (not held yet)
    ShardedBuffer<float> b(100);
    State state("checkpoint");
    state.track("b", b);
    state.sync();
    expect_error<InvalidArgument>([&] { save(state, "/nonexistent"); },
                                  "'b' is a sharded value, which durable checkpoints do not hold",
                                  "a checkpoint of a sharded value");
  }
}

}  // namespace

int main() {
  cohort::testing::g_program = "shard_check";
  try {
    cohort::init();
  } catch (const cohort::Error& e) {
    std::cerr << "shard_check: init() refused: " << e.what() << std::endl;
    return 1;
  }
  check_commit_restore_sync();
  check_bad_input();
  if (cohort::rank() == 0) {
    std::cout << "shard_check: passed on " << cohort::size() << " ranks" << std::endl;
  }
  cohort::shutdown();
  return 0;
}
