// Runs under cohortrun or mpirun with any COHORT_CACHE_CAPACITY: the response cache must never
// change a result. 60 rounds submit 24 names in a rank-dependent order with a rotating subset
// (so a small cache evicts and reassigns all the time), change every name's shape every 20 rounds
// (cached names with new parameters must be renegotiated, never run with the old ones), and let
// one rank alone change a cached name's shape (every rank must get the mismatch).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

int main() {
  g_program = "cache_check";
  cohort::init();
  int n = cohort::size(), me = cohort::rank();
  std::mt19937 order(static_cast<unsigned>(me));
  for (int round = 0; round < 60; ++round) {
    size_t length = 3 + static_cast<size_t>(round / 20) * 5;
    std::vector<int> names;
    for (int i = 0; i < 24; ++i) {
      if ((i + round) % 3 != 0) names.push_back(i);  // a rotating two thirds of the names
    }
    std::shuffle(names.begin(), names.end(), order);
    std::vector<std::vector<float>> values;
    std::vector<Handle> handles;
    values.reserve(names.size());
    for (int i : names) {
      values.emplace_back(length, static_cast<float>(me + i));
      handles.push_back(allreduce_async("t" + std::to_string(i), Tensor::of(values.back())));
    }
    for (auto& h : handles) h.wait();
    for (size_t k = 0; k < names.size(); ++k) {
      float expected = static_cast<float>(n * (n - 1) / 2 + n * names[k]);
      check(values[k].size() == length && values[k].back() == expected,
            "round " + std::to_string(round) + ": 't" + std::to_string(names[k]) + "' correct");
    }
  }
  // The same name, now with another shape on rank 1 only: a mismatch on every rank, not a stale
  // cached response.
  std::vector<float> v(me == 1 ? 4 : 13, 1.0f);
  expect_error<MismatchError>([&] { allreduce("t1", Tensor::of(v)); }, "mismatched shapes",
                              "one rank changed a cached tensor's shape");
  std::vector<float> after(13, 1.0f);
  allreduce("t1", Tensor::of(after));
  check(after[0] == static_cast<float>(n), "the name works again once the ranks agree");
  cohort::shutdown();
  std::cout << "rank " << me << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
