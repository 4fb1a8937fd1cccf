// Runs under cohortrun or mpirun with 2-4 ranks and checks a State's sharded values across real
// processes, in one world (the elastic scenarios, test/scenarios/sharded_scenarios.sh, change
// the world): commit, restore and sync of the ranges, and the bad inputs that must fail on every
// rank alike with nothing changed; and durable checkpoints of sharded values: in one world, and
// saved by one world and loaded by another (resize_check.sh runs `resize-a` then `resize-b`).
// Exits non-zero on the first failure, naming it.
//   shard_check                      one world: commit, restore, sync, bad input
//   shard_check checkpoint DIR       one world: save, load, a damaged or missing part, pruning
//   shard_check resize-a|resize-b DIR  save in this world | load the save into this one
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

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

// A State destroyed after its storage, a commit's replicas still in flight when the runtime shuts
// down: the State's destructor waits for them and touches nothing else (the process exits 0).
void commit_then_leave(std::unique_ptr<State>& state) {
  auto b = std::make_unique<ShardedBuffer<float>>(1001);
  state = std::make_unique<State>("leaving");
  state->track("b", *b);
  state->sync();
  fill(*b, 5);
  state->commit();
  b.reset();  // the storage first; the State goes after shutdown()
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
}

// Rank 0: the part files of checkpoint `sequence` in `dir`, by name.
std::vector<std::string> parts_of(const std::filesystem::path& dir, uint64_t sequence) {
  std::vector<std::string> out;
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "ckpt-%020llu.rank-",
                static_cast<unsigned long long>(sequence));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

std::string part(uint64_t sequence, int rank) {
  char name[96];
  std::snprintf(name, sizeof name, "ckpt-%020llu.rank-%d-of-%d.part",
                static_cast<unsigned long long>(sequence), rank, cohort::size());
  return name;
}

// Rank 0 changes one byte in the middle of `file`; every rank waits for it.
void damage(const std::filesystem::path& file) {
  if (cohort::rank() == 0) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(file) / 2));
    f.put('\x5a');
  }
  cohort::barrier("shard_check.damage");
}

void check_checkpoint(const std::filesystem::path& dir) {
  int n = cohort::size();
  ShardedBuffer<float> b(1001);
  std::vector<int32_t> steps{0};
  State state("checkpoint");
  state.track("b", b);
  state.track("steps", steps);
  expect_error<InvalidArgument>([&] { save(state, dir); }, "there is no commit to save",
                                "a save before any commit");
  fill(b, 1);
  state.commit();
  check(save(state, dir).sequence == 1, "the first save");
  fill(b, 2);
  steps[0] = 2;
  state.commit();
  check(save(state, dir).sequence == 2, "the second save");
  if (cohort::rank() == 0) {
    check(parts_of(dir, 2).size() == static_cast<size_t>(n), "one part file per rank");
  }
  fill(b, 3);
  auto loaded = load_latest(state, dir);
  check(loaded && loaded->sequence == 2 && holds(b, 2) && state.commit_count() == 2,
        "a load takes the newest checkpoint's ranges");
  damage(dir / part(2, n - 1));
  loaded = load_latest(state, dir);
  check(loaded && loaded->sequence == 1 && holds(b, 1) && steps[0] == 0,
        "a damaged part: the load takes the checkpoint before, every value of it");
  if (cohort::rank() == 0) std::filesystem::remove(dir / part(1, 0));
  cohort::barrier("shard_check.removed");
  fill(b, 4);
  check(!load_latest(state, dir) && holds(b, 4),
        "no checkpoint with every part: nothing loaded, nothing changed");
  state.commit();
  CheckpointOptions keep_one;
  keep_one.keep_last = 1;
  check(save(state, dir, keep_one).sequence == 3, "a save after the damaged ones");
  if (cohort::rank() == 0) {
    check(parts_of(dir, 1).empty() && parts_of(dir, 2).empty() &&
              parts_of(dir, 3).size() == static_cast<size_t>(n),
          "pruning removes the parts of the checkpoints it removes");
  }
  ShardedBuffer<float> other(1000);
  State wrong("checkpoint");
  wrong.track("b", other);
  wrong.track("steps", steps);
  expect_error<CheckpointError>([&] { load_latest(wrong, dir); },
                                "'b' is float32, 1001 elements in it but float32, 1000 elements",
                                "a checkpoint of another length");
}

// resize-a: saves version 7 in this world; resize-b: loads it into this one (another size).
void check_resize(const std::string& half, const std::filesystem::path& dir) {
  ShardedBuffer<float> b(1001);
  State state("resize");
  state.track("b", b);
  if (half == "resize-a") {
    fill(b, 7);
    state.commit();
    save(state, dir);
    return;
  }
  auto loaded = load_latest(state, dir);
  check(loaded && b.range() == shard_range(1001, cohort::rank(), cohort::size()) && holds(b, 7),
        "every rank of the new world holds its new range as saved");
  fill(b, 8);
  state.restore();
  check(holds(b, 7), "the load is the last commit");
  state.commit();
}

}  // namespace

int main(int argc, char** argv) {
  cohort::testing::g_program = "shard_check";
  try {
    cohort::init();
  } catch (const cohort::Error& e) {
    std::cerr << "shard_check: init() refused: " << e.what() << std::endl;
    return 1;
  }
  if (argc == 3 && std::string(argv[1]) == "checkpoint") {
    check_checkpoint(argv[2]);
  } else if (argc == 3) {
    check_resize(argv[1], argv[2]);
  }
  std::unique_ptr<State> leaving;
  if (argc < 3) {
    check_commit_restore_sync();
    check_bad_input();
    commit_then_leave(leaving);
  }
  if (cohort::rank() == 0) {
    std::cout << "shard_check: passed on " << cohort::size() << " ranks" << std::endl;
  }
  cohort::shutdown();
  leaving.reset();
  return 0;
}
