// Runs under cohortrun with 3 ranks: one name submitted with different operations, data types or
// process sets fails on every rank at once with MismatchError naming what each rank submitted,
// also when the name is pending in two process sets that wait for each other
// (core/negotiator_names.cc); the same name in two sets that can each complete still runs. Every
// wait has its own bound: a collective not done within kBound fails the check (exit 1), never a
// hang.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

constexpr std::chrono::milliseconds kBound{15000};

// Waits for `h` (at most kBound): the MismatchError it must end with, containing `fragment`.
void expect_mismatch(const Handle& h, const std::string& fragment, const std::string& what) {
  expect_error<MismatchError>(
      [&] {
        if (h.wait_for(kBound)) return;  // throws the collective's error
        std::cerr << "rank " << rank() << ": " << what << ": still waiting after 15 s" << std::endl;
        std::_Exit(1);
      },
      fragment, what);
}

void expect_done(const Handle& h, const std::string& what) {
  check(h.wait_for(kBound), what + ": completes within 15 s");
}

void different_operations(std::vector<float>& v) {
  Handle h = rank() == 0 ? allreduce_async("op", Tensor::of(v), Tensor::of(v))
                         : broadcast_async("op", Tensor::of(v), 0);
  expect_mismatch(h, "'op': mismatched operations: rank 0 allreduce, rank 1 broadcast, rank 2",
                  "allreduce on rank 0, broadcast on the others");
}

void different_data_types() {
  std::vector<float> f(4, 1.0f);
  std::vector<double> d(4, 1.0);
  Tensor t = rank() == 0 ? Tensor::of(f) : Tensor::of(d);
  expect_mismatch(allreduce_async("dtype", t, t),
                  "'dtype': mismatched data types: rank 0 float32, rank 1 float64",
                  "float32 on rank 0, float64 on the others");
}

// Rank 0 submits the name in `first`, the others in `second`, and each set waits for a rank busy
// with the other.
void different_sets(std::vector<float>& v, ProcessSet first, ProcessSet second) {
  Handle h = rank() == 0
                 ? allreduce_async("ps", Tensor::of(v), Tensor::of(v), {.process_set = first})
                 : allreduce_async("ps", Tensor::of(v), Tensor::of(v), {.process_set = second});
  expect_mismatch(h, "'ps': mismatched process sets: rank 0 " + std::to_string(first.id),
                  "one name in two sets that wait for each other");
  Handle g = rank() == 0 ? allreduce_async("ps.op", Tensor::of(v), Tensor::of(v))
                         : broadcast_async("ps.op", Tensor::of(v), 0, second);
  expect_mismatch(g, "'ps.op': mismatched operations: rank 0 allreduce, rank 1 broadcast",
                  "allreduce in the world on rank 0, broadcast in a set on the others");
}

// Rank 0 alone in `mine`, the others in `theirs`: one name, two collectives, both legitimate.
void disjoint_sets(ProcessSet mine, ProcessSet theirs) {
  std::vector<float> v(4, 1.0f);
  ProcessSet set = rank() == 0 ? mine : theirs;
  expect_done(allreduce_async("legit", Tensor::of(v), Tensor::of(v), {.process_set = set}),
              "one name in disjoint sets");
  check(v[0] == (rank() == 0 ? 1.0f : 2.0f), "each set sums its own ranks");
}

}  // namespace

int main() {
  g_program = "one_name_check";
  cohort::init();
  const int me = rank();
  check(size() == 3, "needs 3 ranks");
  std::vector<float> v(4, 1.0f);
  different_operations(v);
  different_data_types();
  ProcessSet pair = add_process_set({0, 1});
  ProcessSet all = add_process_set({0, 1, 2});
  different_sets(v, pair, all);
  ProcessSet zero = add_process_set({0});
  ProcessSet rest = add_process_set({1, 2});
  disjoint_sets(zero, rest);
  // The names are free again and the runtime goes on.
  for (const char* name : {"op", "dtype", "ps", "ps.op"}) {
    std::vector<int64_t> x(3, 1);
    expect_done(allreduce_async(name, Tensor::of(x), Tensor::of(x)), std::string("'") + name + "'");
    check(x[0] == 3, std::string("'") + name + "' sums afterwards");
  }
  cohort::shutdown();
  std::cout << "rank " << me << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
