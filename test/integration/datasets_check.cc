// The seed scenario "different datasets and tasks per rank", with 3 ranks. Dataset "shared" is on
// every rank, "left" only on ranks 0 and 1, "right" only on ranks 1 and 2; each has the tasks
// "loss" and "accuracy". Every rank submits its metric allreduces in its own order:
//   1. names every rank submits complete, whatever the order;
//   2. submitted over the whole world, the names only some ranks have never complete: the stall
//      inspector names the missing rank and tensors, and the stall shutdown time fails them
//      (datasets_check.sh checks the messages) instead of hanging;
//   3. over a process set of the ranks that have the dataset, they complete.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

const std::map<std::string, std::vector<int>> kDatasets = {
    {"shared", {0, 1, 2}}, {"left", {0, 1}}, {"right", {1, 2}}};
const std::vector<std::string> kTasks = {"loss", "accuracy"};

bool has(const std::string& dataset, int rank) {
  const auto& ranks = kDatasets.at(dataset);
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// The metric of (dataset, task) on `rank`: distinct per rank so that averages are checkable.
float metric(int rank, size_t task) {
  return static_cast<float>(10 * rank + static_cast<int>(task));
}

struct Submission {
  std::string dataset;
  size_t task;
  std::vector<float> value;
  Handle handle;
};

// This rank's metric allreduces for `datasets`, submitted in a rank-dependent order.
std::vector<Submission> submit(const std::vector<std::string>& datasets, const std::string& round,
                               const std::map<std::string, ProcessSet>& sets) {
  int me = cohort::rank();
  std::vector<Submission> out;
  for (const auto& d : datasets) {
    if (!has(d, me)) continue;
    for (size_t t = 0; t < kTasks.size(); ++t) out.push_back({d, t, {metric(me, t)}, {}});
  }
  std::shuffle(out.begin(), out.end(), std::mt19937(static_cast<unsigned>(me) + 7));
  for (auto& s : out) {
    AllreduceOptions options{ReduceOp::kAverage};
    if (auto it = sets.find(s.dataset); it != sets.end()) options.process_set = it->second;
    s.handle = allreduce_async(round + "/" + s.dataset + "/" + kTasks[s.task], Tensor::of(s.value),
                               options);
  }
  return out;
}

float expected_average(const std::string& dataset, size_t task) {
  float sum = 0;
  for (int r : kDatasets.at(dataset)) sum += metric(r, task);
  return sum / static_cast<float>(kDatasets.at(dataset).size());
}

}  // namespace

int main() {
  g_program = "datasets_check";
  cohort::init();
  if (cohort::size() != 3) fail("needs exactly 3 ranks");
  int me = cohort::rank();

  for (auto& s : submit({"shared"}, "common", {})) {
    s.handle.wait();
    check(s.value[0] == expected_average("shared", s.task), "common metric in any order");
  }

  int stalled = 0;
  for (auto& s : submit({"left", "right"}, "world", {})) {
    try {
      s.handle.wait();
      fail("a metric of a dataset only some ranks have completed over the whole world");
    } catch (const StallError& e) {
      std::cout << "rank " << me << " StallError: " << e.what() << std::endl;
      ++stalled;
    }
  }
  check(stalled == (me == 1 ? 4 : 2), "every partial metric failed with StallError");

  std::map<std::string, ProcessSet> sets = {{"left", add_process_set(kDatasets.at("left"))},
                                            {"right", add_process_set(kDatasets.at("right"))}};
  for (auto& s : submit({"shared", "left", "right"}, "sets", sets)) {
    s.handle.wait();
    check(s.value[0] == expected_average(s.dataset, s.task),
          "metric of '" + s.dataset + "' averaged over the ranks that have it");
  }
  cohort::shutdown();
  std::cout << "rank " << me << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
