// Runs under cohortrun or mpirun with 2-4 ranks: grouped allreduce as one negotiated request.
// Checks groups repeated from the response cache (fresh buffers some rounds), renegotiated with
// new shapes, fused with plain allreduces submitted beside them, of several types, scaled and
// averaged, with a mismatch in one member on one rank only (every rank gets the error, naming
// the member), while a rank has joined, and over a process set. Run with several
// COHORT_FUSION_THRESHOLD and COHORT_CACHE_CAPACITY values. Exits non-zero on the first failure.
#include <numeric>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

std::string str(size_t v) {
  return std::to_string(v);
}

// Sum over ranks of (rank + 1) * (i + 1): what member i holds after a sum.
float expected_sum(int ranks, size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2) * static_cast<float>(i + 1);
}

// A group of `members` float tensors of `length + i` elements; member i holds (me+1)*(i+1).
struct Group {
  std::vector<std::vector<float>> values;
  Group(size_t members, size_t length, int me) {
    for (size_t i = 0; i < members; ++i) {
      values.emplace_back(length + i, static_cast<float>(me + 1) * static_cast<float>(i + 1));
    }
  }
  std::vector<Tensor> tensors() {
    std::vector<Tensor> out;
    for (auto& v : values) out.push_back(Tensor::of(v));
    return out;
  }
  void check_sum(int ranks, float scale, const std::string& what) const {
    for (size_t i = 0; i < values.size(); ++i) {
      float want = expected_sum(ranks, i) * scale;
      check(values[i].front() == want && values[i].back() == want,
            what + ": member " + str(i) + " is " + std::to_string(values[i].back()) +
                ", expected " + std::to_string(want));
    }
  }
};

// Steady steps from the cache, fresh buffers every third round, new shapes every fifth.
void check_repeated_and_reshaped() {
  int n = cohort::size(), me = cohort::rank();
  Group kept(30, 3, me);
  for (size_t round = 0; round < 15; ++round) {
    size_t length = 3 + round / 5 * 4;
    if (round % 3 == 0 || kept.values.front().size() != length) kept = Group(30, length, me);
    for (size_t i = 0; i < kept.values.size(); ++i) {
      std::fill(kept.values[i].begin(), kept.values[i].end(),
                static_cast<float>(me + 1) * static_cast<float>(i + 1));
    }
    grouped_allreduce("steady", kept.tensors());
    kept.check_sum(n, 1.0f, "round " + str(round));
  }
}

// A group between plain allreduces, all in flight at once: they may fuse together.
void check_fused_with_plain() {
  int n = cohort::size(), me = cohort::rank();
  for (int round = 0; round < 3; ++round) {
    std::vector<float> before(7, static_cast<float>(me)), after(9, 1.0f);
    Group g(12, 5, me);
    Handle a = allreduce_async("plain before", Tensor::of(before));
    Handle h = grouped_allreduce_async("between", g.tensors());
    Handle b = allreduce_async("plain after", Tensor::of(after));
    a.wait();
    h.wait();
    b.wait();
    g.check_sum(n, 1.0f, "group between plain allreduces");
    check(before[6] == static_cast<float>(n * (n - 1) / 2), "plain allreduce before the group");
    check(after[8] == static_cast<float>(n), "plain allreduce after the group");
  }
}

void check_types_and_scaling() {
  int n = cohort::size(), me = cohort::rank();
  std::vector<float> f1(5, 1.0f), f2(3, 2.0f);
  std::vector<int32_t> i1(4, me);
  std::vector<double> d1(2, 0.5);
  std::vector<float> empty;
  grouped_allreduce(
      "mixed", {Tensor::of(f1), Tensor::of(i1), Tensor::of(f2), Tensor::of(empty), Tensor::of(d1)});
  check(f1[4] == static_cast<float>(n) && f2[2] == 2.0f * static_cast<float>(n),
        "mixed group: float members");
  check(i1[3] == n * (n - 1) / 2, "mixed group: the int32 member between floats");
  check(d1[1] == 0.5 * n, "mixed group: the float64 member");

  Group g(6, 4, me);
  grouped_allreduce("scaled", g.tensors(), {ReduceOp::kSum, 2.0, 0.25});
  g.check_sum(n, 0.5f, "prescale 2, postscale 0.25");
  Group avg(6, 4, me);
  grouped_allreduce("averaged", avg.tensors(), {ReduceOp::kAverage});
  avg.check_sum(n, 1.0f / static_cast<float>(n), "average");
  std::vector<float> one(3, 1.0f);
  grouped_allreduce("single", {Tensor::of(one)});
  check(one[2] == static_cast<float>(n), "a group of one tensor");
}

// Rank 1 alone gives member 2 another shape: every rank gets the mismatch, which names member 2;
// the same group runs again once the ranks agree.
void check_mismatch_in_one_member() {
  int n = cohort::size(), me = cohort::rank();
  Group agreed(4, 3, me);
  grouped_allreduce("reshaped", agreed.tensors());  // cached now
  Group g(4, 3, me);
  if (me == 1) g.values[2].resize(11, 3.0f);
  expect_error<MismatchError>([&] { grouped_allreduce("reshaped", g.tensors()); },
                              "allreduce 'reshaped': member 2: mismatched shapes",
                              "one rank changed one member's shape");
  Group again(4, 3, me);
  grouped_allreduce("reshaped", again.tensors());
  again.check_sum(n, 1.0f, "the group after the mismatch");
}

// The last rank joins at once; the others reduce a group without it (its identity: zeros).
void check_group_while_joined() {
  int n = cohort::size(), me = cohort::rank();
  if (me == n - 1) {
    check(join() < n - 1, "the rank that joined last is one of the others");
    return;
  }
  for (int round = 0; round < 2; ++round) {
    Group g(8, 2, me);
    grouped_allreduce("while joined", g.tensors());
    g.check_sum(n - 1, 1.0f, "a group while the last rank has joined");
    Group avg(3, 2, me);
    grouped_allreduce("average while joined", avg.tensors(), {ReduceOp::kAverage});
    float sum_of_others = static_cast<float>((n - 1) * n / 2);
    check(avg.values[2][1] == sum_of_others * 3.0f / static_cast<float>(n),
          "an average while joined divides by the full size");
  }
  check(join() < n - 1, "the rank that joined last is one of the others");
}

void check_group_in_process_set() {
  int n = cohort::size(), me = cohort::rank();
  std::vector<int> tail(static_cast<size_t>(n - 1));
  std::iota(tail.begin(), tail.end(), 1);
  ProcessSet without_0 = add_process_set(tail);
  if (me == 0) {
    Group g(3, 2, me);
    expect_error<InvalidArgument>(
        [&] { grouped_allreduce("set group", g.tensors(), {.process_set = without_0}); },
        "is not a member of process set", "a group over a set without this rank");
  } else {
    for (int round = 0; round < 2; ++round) {
      Group g(5, 2, me);
      grouped_allreduce("set group", g.tensors(), {.process_set = without_0});
      float members_sum = static_cast<float>(n * (n + 1) / 2 - 1);  // ranks 1..n-1, plus one each
      for (size_t i = 0; i < g.values.size(); ++i) {
        check(g.values[i][0] == members_sum * static_cast<float>(i + 1), "a group over a set");
      }
    }
  }
  Group world(5, 2, me);  // the same name over the whole world
  grouped_allreduce("set group", world.tensors());
  world.check_sum(n, 1.0f, "the same group name over the world");
}

}  // namespace

int main() {
  g_program = "group_check";
  cohort::init();
  if (cohort::size() < 2) fail("needs at least 2 ranks");
  check_repeated_and_reshaped();
  check_fused_with_plain();
  check_types_and_scaling();
  check_mismatch_in_one_member();
  check_group_while_joined();
  check_group_in_process_set();
  int rank = cohort::rank();
  cohort::shutdown();
  std::cout << "rank " << rank << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
