// Runs under cohortrun or mpirun with 2-4 ranks and checks State, the samplers and checkpoints
// across real processes. Modes:
//   state_check basic DIR     sync from rank 0 (also to ranks that join with fresh values; values
//                             the same on every rank kept after a restore everywhere),
//                             sampler merge and rollback, errors raised on every rank,
//                             DistributedSampler on an uneven dataset, checkpoints and their errors
//   state_check resize-a DIR  trains part of an epoch with commits, logging committed samples,
//                             saves a checkpoint, then trains a little more without committing
//   state_check resize-b DIR  (another world size) loads it, finishes the epoch, and checks that
//                             both jobs' committed histories trained every sample exactly once
// Exits non-zero on the first failure, naming it.
#include <sys/resource.h>

#include <cereal/types/string.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>

#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"
#include "cohort/elastic/distributed_sampler.h"
#include "cohort/elastic/state.h"
#include "test/integration/check.h"

using namespace cohort;
using namespace cohort::elastic;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kSamples = 5000;
constexpr uint64_t kBatch = 16;

using cohort::testing::check;
using cohort::testing::fail;

std::vector<int64_t> gather(int64_t mine, const std::string& name) {
  OwnedTensor all = cohort::allgather(name, Tensor::of(std::span<int64_t>(&mine, 1)));
  auto v = all.as<int64_t>();
  return {v.begin(), v.end()};
}

bool all_equal(int64_t mine, const std::string& name) {
  for (int64_t v : gather(mine, name)) {
    if (v != mine) return false;
  }
  return true;
}

// A digest of the committed set, to compare across ranks.
int64_t committed_digest(const ElasticSampler& s) {
  uint64_t h = 0;
  for (uint64_t i = 0; i < s.dataset_size(); ++i) {
    if (s.is_committed(i)) h += (i + 1) * 0x9e3779b97f4a7c15ULL ^ (i << 7);
  }
  return static_cast<int64_t>(h);
}

struct Meta {
  int epoch = 0;
  std::string owner;
  template <class A>
  void serialize(A& a) {
    a(epoch, owner);
  }
};

void check_sync() {
  int r = cohort::rank();
  State state("sync");
  std::vector<float> weights(4097, static_cast<float>(r + 1));
  std::vector<int64_t> counters(5, r * 100);
  Meta meta{r, "rank-" + std::to_string(r)};
  ElasticSampler sampler(kSamples, 7);
  sampler.set_epoch(static_cast<uint64_t>(r) * 10);
  state.track("weights", weights);
  state.track("counters", counters);
  state.track("meta", meta);
  state.track("sampler", sampler);
  state.sync();
  check(weights == std::vector<float>(4097, 1.0f), "sync: weights are rank 0's");
  check(counters == std::vector<int64_t>(5, 0), "sync: counters are rank 0's");
  check(meta.epoch == 0 && meta.owner == "rank-0", "sync: the object is rank 0's");
  check(sampler.epoch() == 0 && sampler.world_size() == cohort::size() && sampler.rank() == r,
        "sync: the sampler is rank 0's, partitioned over this world");
  weights[0] = 42.0f;
  state.restore();
  check(weights[0] == 1.0f, "sync is the restore point");
}

// A string tracked through track_bytes with `scope`.
void track_text(State& state, const std::string& name, std::string& text, ValueScope scope) {
  state.track_bytes(
      name, "text/v1", [&text] { return text; },
      [&text](std::string_view bytes) {
        return [&text, value = std::string(bytes)] { text = value; };
      },
      scope);
}

// ValueScope::kSameOnEveryRank: a sync after every rank restored its commit sends none of it (each
// rank keeps its own, which the test makes differ to see it); any other sync sends it as ever.
void check_sync_keeps_same_values() {
  int r = cohort::rank();
  std::string mine = "rank " + std::to_string(r);
  std::string same = mine, per = mine;
  State state("keep");
  track_text(state, "same", same, ValueScope::kSameOnEveryRank);
  track_text(state, "per", per, ValueScope::kPerRank);
  state.sync();  // no commit anywhere: rank 0's
  check(same == "rank 0" && per == "rank 0" && state.last_sync_kept().empty(),
        "keep: the first sync sends every value");
  state.commit();
  state.restore();
  same = per = mine;  // as a reset callback might change them
  state.sync();
  check(same == mine && per == "rank 0", "keep: after a restore everywhere, 'same' is kept");
  check(state.last_sync_kept() == std::vector<std::string>{"same"}, "keep: last_sync_kept");
  state.restore();
  check(same == "rank 0", "keep: the kept value's commit is the one every rank restored");
  state.commit();
  if (r != 1) state.restore();  // rank 1 did not restore
  same = mine;
  state.sync();
  check(same == "rank 0" && state.last_sync_kept().empty(),
        "keep: a rank that did not restore makes the sync send it");
  state.commit();
  state.restore();
  std::vector<int32_t> late(3, r);
  state.track("late", late);
  same = mine;
  state.sync();
  check(same == "rank 0" && late == std::vector<int32_t>(3, 0),
        "keep: a value tracked after the restore makes the sync send everything");
}

// Trains `steps` steps over the sampler; returns what this rank recorded.
std::vector<uint64_t> train(ElasticSampler& sampler, uint64_t steps) {
  std::vector<uint64_t> recorded;
  auto range = sampler.batches(kBatch);
  auto it = range.begin();
  for (uint64_t i = 0; i < steps && it != range.end(); ++i, ++it) {
    sampler.record(*it);
    recorded.insert(recorded.end(), it->begin(), it->end());
  }
  return recorded;
}

void check_merge_and_rollback() {
  State state("merge");
  ElasticSampler sampler(kSamples, 3);
  std::vector<float> model(100, 0.0f);
  state.track("model", model);
  state.track("sampler", sampler);
  state.sync();
  std::map<uint64_t, int> trained;  // this rank's committed history
  for (int round = 0; round < 4; ++round) {
    auto got = train(sampler, 3);
    state.commit();
    for (uint64_t s : got) ++trained[s];
    for (uint64_t s : got) check(sampler.is_committed(s), "merge: own samples committed");
    check(all_equal(committed_digest(sampler), "check/digest/" + std::to_string(round)),
          "merge: every rank holds the same committed set");
    check(all_equal(static_cast<int64_t>(sampler.unprocessed()),
                    "check/left/" + std::to_string(round)),
          "merge: every rank counts the same remainder");
  }
  uint64_t before = sampler.unprocessed();
  auto lost = train(sampler, 2);
  model[0] = 5.0f;
  state.restore();
  check(sampler.unprocessed() == before && sampler.uncommitted() == 0 && model[0] == 0.0f,
        "rollback: back to the last commit");
  for (uint64_t s : lost)
    check(!sampler.is_committed(s), "rollback: lost samples are not committed");
  // Finish the epoch; every rank runs the same number of steps.
  uint64_t steps = sampler.steps(kBatch);
  check(all_equal(static_cast<int64_t>(steps), "check/steps"), "steps are equal on every rank");
  auto rest = train(sampler, steps);
  state.commit();
  for (uint64_t s : rest) ++trained[s];
  check(sampler.unprocessed() == 0, "the epoch is complete");
  // Exactly once across ranks: gather every rank's history.
  std::vector<int64_t> mine;
  for (auto [s, n] : trained) {
    check(n == 1, "a sample trained twice on one rank");
    mine.push_back(static_cast<int64_t>(s));
  }
  if (mine.empty()) mine.push_back(-1);
  OwnedTensor all = cohort::allgather("check/history", Tensor::of(mine));
  std::vector<int> count(kSamples);
  for (int64_t s : all.as<int64_t>()) {
    if (s >= 0) ++count[static_cast<size_t>(s)];
  }
  for (uint64_t s = 0; s < kSamples; ++s)
    check(count[s] == 1,
          "sample " + std::to_string(s) + " trained " + std::to_string(count[s]) + " times");
}

void check_joiners() {
  int r = cohort::rank();
  auto survivor_state = std::make_unique<State>("join");
  auto sampler = std::make_unique<ElasticSampler>(kSamples, 5);
  std::vector<double> w(333, 1.5);
  survivor_state->track("w", w);
  survivor_state->track("sampler", *sampler);
  survivor_state->sync();
  train(*sampler, 5);
  w.assign(333, 2.5);
  survivor_state->commit();
  int64_t digest = committed_digest(*sampler);
  if (r != 0) {  // these ranks "die" and come back with fresh values
    survivor_state.reset();
    sampler = std::make_unique<ElasticSampler>(kSamples, 5);
    w.assign(333, 0.0);
    survivor_state = std::make_unique<State>("join");
    survivor_state->track("w", w);
    survivor_state->track("sampler", *sampler);
  }
  survivor_state->sync();
  check(w == std::vector<double>(333, 2.5), "joiners get rank 0's buffer");
  check(committed_digest(*sampler) == digest, "joiners get rank 0's committed set");
  check(survivor_state->commit_count() == 1, "joiners get rank 0's commit count");
  train(*sampler, 2);
  survivor_state->commit();  // the commit counter agrees, so the collective names do
}

void check_errors_everywhere() {
  int r = cohort::rank();
  {  // different tracked values: sync fails on every rank, changing nothing
    State state("mismatch");
    std::vector<float> a(r == 1 ? 10 : 12, static_cast<float>(r));
    state.track("a", a);
    cohort::testing::expect_error<MismatchError>([&] { state.sync(); },
                                                 "a buffer of float32, 48 bytes on rank 0",
                                                 "sync of different sizes");
    check(a[0] == static_cast<float>(r), "a failed sync changes nothing");
  }
  {  // one rank's resized buffer fails the commit everywhere
    State state("resized");
    std::vector<float> a(8, 1.0f);
    state.track("a", a);
    state.commit();
    if (r == 1) a.push_back(1.0f);
    cohort::testing::expect_error<InvalidArgument>([&] { state.commit(); },
                                                   "rank 1: tracked buffer 'a' now has 9",
                                                   "commit with a resized buffer on rank 1");
    check(state.commit_count() == 1, "a failed commit commits nothing");
    if (r == 1) a.pop_back();
    state.commit();
  }
  {  // uncommitted records on one rank refuse the sync everywhere
    State state("uncommitted");
    ElasticSampler sampler(kSamples, 1);
    state.track("sampler", sampler);
    state.sync();
    if (r == 1) train(sampler, 1);
    cohort::testing::expect_error<InvalidArgument>([&] { state.sync(); }, "uncommitted records",
                                                   "sync with records");
    state.restore();
    state.sync();
  }
}

void check_distributed_sampler() {
  const uint64_t n = 1001;  // not divisible by 2, 3 or 4
  DistributedSampler sampler(n, {.seed = 9});
  sampler.set_epoch(3);
  int64_t steps = 0, samples = 0;
  for (const auto& batch : sampler.batches(10)) {
    // One allreduce per step, as a training step would: an uneven last batch would hang here.
    int64_t count = static_cast<int64_t>(batch.size());
    cohort::allreduce("ddp/step/" + std::to_string(steps),
                      Tensor::of(std::span<int64_t>(&count, 1)));
    samples += count;
    ++steps;
  }
  check(all_equal(steps, "check/ddp/steps"), "DistributedSampler: equal step counts");
  check(static_cast<uint64_t>(samples) == sampler.total_size(),
        "DistributedSampler: every slot trained");
}

void check_checkpoints(const fs::path& dir) {
  int r = cohort::rank();
  State state("ckpt");
  std::vector<float> w(1 << 14, 1.0f);
  Meta meta{1, "first"};
  ElasticSampler sampler(kSamples, 2);
  state.track("w", w);
  state.track("meta", meta);
  state.track("sampler", sampler);
  state.sync();
  train(sampler, 3);
  state.commit();
  int64_t digest = committed_digest(sampler);
  CheckpointInfo saved = save(state, dir);
  check(all_equal(static_cast<int64_t>(saved.sequence), "check/ckpt/seq"),
        "save: the same info everywhere");

  // Rank 0's disk "fills up": every rank gets the error, the previous checkpoint stays.
  w.assign(w.size(), 2.0f);
  meta = {2, "second"};
  state.commit();
  if (r == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{};
    getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = 10'000;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  cohort::testing::expect_error<CheckpointError>([&] { save(state, dir); }, "File too large",
                                                 "save on a full disk");
  if (r == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  cohort::testing::expect_error<CheckpointError>(
      [&] { save(state, "/proc/cohort-cannot-create-this"); }, "checkpoint",
      "save where nothing can be created");

  // Every rank ends with the checkpoint's state, whatever it held.
  w.assign(w.size(), static_cast<float>(r + 10));
  meta = {r, "scrambled"};
  train(sampler, 1);
  auto loaded = load_latest(state, dir);
  check(loaded && loaded->sequence == saved.sequence, "load: the saved checkpoint");
  check(w == std::vector<float>(w.size(), 1.0f) && meta.epoch == 1 && meta.owner == "first",
        "load: rank 0's checkpoint everywhere");
  check(committed_digest(sampler) == digest && sampler.uncommitted() == 0,
        "load: the committed set");
}

void log_committed(const fs::path& file, const std::vector<uint64_t>& samples) {
  std::ofstream out(file, std::ios::app);
  for (uint64_t s : samples) out << s << "\n";
  out.flush();
  check(out.good(), "cannot write " + file.string());
}

struct ResizeState {
  State state{"resize"};
  ElasticSampler sampler{kSamples, 21};
  int epoch = 0;
  ResizeState() {
    state.track("epoch", epoch);
    state.track("sampler", sampler);
  }
};

void resize_a(const fs::path& dir) {
  ResizeState s;
  s.state.sync();
  fs::path log = dir / ("log-a-" + std::to_string(cohort::rank()));
  for (int commit = 1; commit <= 3; ++commit) {
    auto got = train(s.sampler, 7);
    s.state.commit();
    log_committed(log, got);
  }
  save(s.state, dir);
  train(s.sampler, 4);  // lost: never committed, never saved
}

void resize_b(const fs::path& dir) {
  ResizeState s;
  check(load_latest(s.state, dir).has_value(), "resize-b: a checkpoint to resume from");
  check(s.sampler.world_size() == cohort::size(), "resize-b: repartitioned over the new world");
  fs::path log = dir / ("log-b-" + std::to_string(cohort::rank()));
  while (s.sampler.unprocessed() > 0) {
    auto got = train(s.sampler, 5);
    s.state.commit();
    log_committed(log, got);
  }
  cohort::barrier("check/resize/done");
  if (cohort::rank() != 0) return;
  std::vector<int> count(kSamples);
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("log-", 0) != 0) continue;
    std::ifstream in(e.path());
    for (uint64_t sample; in >> sample;) ++count[sample];
  }
  for (uint64_t i = 0; i < kSamples; ++i) {
    check(count[i] == 1, "resize: sample " + std::to_string(i) + " trained " +
                             std::to_string(count[i]) + " times");
  }
  std::cout << "resize: every one of " << kSamples << " samples trained exactly once across a "
            << "world-size change" << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  cohort::testing::g_program = "state_check";
  if (argc < 3) {
    std::cerr << "usage: state_check basic|resize-a|resize-b DIR" << std::endl;
    return 2;
  }
  std::string mode = argv[1];
  fs::path dir = argv[2];
  cohort::init();
  if (mode == "basic") {
    check_sync();
    check_sync_keeps_same_values();
    check_merge_and_rollback();
    check_joiners();
    check_errors_everywhere();
    check_distributed_sampler();
    check_checkpoints(dir);
  } else if (mode == "resize-a") {
    resize_a(dir);
  } else if (mode == "resize-b") {
    resize_b(dir);
  } else {
    fail("unknown mode " + mode);
  }
  if (cohort::rank() == 0)
    std::cout << "state_check " << mode << ": passed on " << cohort::size() << " ranks"
              << std::endl;
  cohort::shutdown();
  return 0;
}
