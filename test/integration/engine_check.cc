// Runs under cohortrun or mpirun with 2-4 ranks: checks grouped allreduce, join (uneven numbers of
// steps per rank, identity contributions, the error for other collectives while a rank has
// joined) and process sets (collectives over subsets, the error for a non-member, removal). Exits
// non-zero on the first failure with a message naming what failed.
#include <numeric>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

std::string str(int v) {
  return std::to_string(v);
}

void check_grouped_allreduce() {
  int n = cohort::size(), me = cohort::rank();
  // 40 float tensors of different sizes and 10 int32 ones: two kinds, released as one group.
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int32_t>> ints;
  std::vector<Tensor> tensors;
  for (int i = 0; i < 40; ++i) floats.emplace_back(static_cast<size_t>(i) + 1, me + 1.0f);
  for (int i = 0; i < 10; ++i) ints.emplace_back(static_cast<size_t>(i) * 3 + 1, me + 1);
  for (auto& f : floats) tensors.push_back(Tensor::of(f));
  for (auto& v : ints) tensors.push_back(Tensor::of(v));
  for (int round = 0; round < 3; ++round) {
    for (auto& f : floats) std::fill(f.begin(), f.end(), me + 1.0f);
    for (auto& v : ints) std::fill(v.begin(), v.end(), me + 1);
    grouped_allreduce("group", tensors);
    float sum = static_cast<float>(n * (n + 1) / 2);
    for (auto& f : floats) check(f.front() == sum && f.back() == sum, "grouped float sum");
    for (auto& v : ints) check(v.front() == n * (n + 1) / 2, "grouped int32 sum");
  }
  std::vector<float> a(4, 2.0f), b(8, 4.0f);
  grouped_allreduce("avg group", {Tensor::of(a), Tensor::of(b)}, {ReduceOp::kAverage});
  check(a[3] == 2.0f && b[7] == 4.0f, "grouped average");
  expect_error<InvalidArgument>([] { grouped_allreduce("empty", {}); }, "at least one tensor",
                                "empty group");
  Tensor no_data{nullptr, DataType::kFloat32, {4}};
  expect_error<InvalidArgument>(
      [&] {
        grouped_allreduce("holed", {Tensor::of(a), no_data});
      },
      "grouped allreduce member 1: 'holed': input has no data pointer",
      "a group member without data");
}

// Rank r trains r + 1 steps, then joins: step i has the ranks >= i as contributors.
void check_join_uneven_steps() {
  int n = cohort::size(), me = cohort::rank();
  for (int step = 0; step <= me; ++step) {
    std::vector<float> sum(16, 1.0f), avg(16, 1.0f);
    std::vector<Handle> handles{
        allreduce_async("step " + str(step), Tensor::of(sum)),
        allreduce_async("step avg " + str(step), Tensor::of(avg), {ReduceOp::kAverage})};
    for (auto& h : handles) h.wait();
    float contributors = static_cast<float>(n - step);
    check(sum[0] == contributors && sum[15] == contributors,
          "step " + str(step) + ": sum over the ranks not joined is " + str(int(sum[0])));
    check(avg[0] == contributors / static_cast<float>(n), "average divides by the full size");
  }
  int last = join();
  check(last == n - 1, "join returns the rank that joined last (" + str(last) + ")");
}

// Rank 0 joins at once; the others see identity contributions and the error for allgather.
void check_join_identity_and_errors() {
  int n = cohort::size(), me = cohort::rank();
  if (me == 0) {
    int last = join();
    check(last >= 1 && last < n, "last joined rank is one of the late ranks");
    return;
  }
  std::vector<float> min_of(4, me + 1.0f), product(4, 2.0f);
  allreduce("min while 0 joined", Tensor::of(min_of), {ReduceOp::kMin});
  check(min_of[0] == 2.0f, "a joined rank contributes +inf to min");
  allreduce("product while 0 joined", Tensor::of(product), {ReduceOp::kProduct});
  check(product[0] == static_cast<float>(1 << (n - 1)), "a joined rank contributes 1 to product");
  std::vector<float> row(2, 1.0f);
  expect_error<MismatchError>([&] { allgather("allgather while 0 joined", Tensor::of(row)); },
                              "cannot run while ranks [0] have joined", "allgather after join");
  int last = join();
  check(last >= 1 && last < n, "last joined rank is one of the late ranks");
}

// Rank i sends j + 1 rows to rank j; each row is 3 int64 values {i, j, k}.
void check_alltoall() {
  int n = cohort::size(), me = cohort::rank();
  std::vector<int64_t> splits, data;
  for (int j = 0; j < n; ++j) {
    splits.push_back(j + 1);
    for (int k = 0; k <= j; ++k) data.insert(data.end(), {me, j, k});
  }
  Tensor input = Tensor::of(std::span<int64_t>(data), {static_cast<int64_t>(data.size() / 3), 3});
  AlltoallResult got = alltoall("alltoall uneven", input, splits);
  check(got.received_splits == std::vector<int64_t>(static_cast<size_t>(n), me + 1),
        "alltoall received splits");
  check(got.output.shape == Shape{static_cast<int64_t>(n) * (me + 1), 3}, "alltoall shape");
  auto rows = got.output.as<int64_t>();
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k <= me; ++k) {
      size_t at = (static_cast<size_t>(i) * (me + 1) + k) * 3;
      check(rows[at] == i && rows[at + 1] == me && rows[at + 2] == k, "alltoall row contents");
    }
  }
  std::vector<float> even(static_cast<size_t>(2 * n), static_cast<float>(me));
  AlltoallResult e = alltoall("alltoall even", Tensor::of(even));
  check(e.output.as<float>()[2 * static_cast<size_t>(n) - 1] == static_cast<float>(n - 1),
        "even alltoall: the last row comes from the last rank");
  expect_error<InvalidArgument>([&] { alltoall("bad splits", Tensor::of(even), {1}); },
                                "splits must be", "alltoall with wrong splits");
}

// 2n + 1 rows of 2 floats: the first rank gets 3 rows, the others 2.
void check_reducescatter() {
  int n = cohort::size(), me = cohort::rank();
  int64_t rows = 2 * n + 1;
  std::vector<float> data(static_cast<size_t>(rows) * 2);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) + me;
  Tensor input = Tensor::of(std::span<float>(data), {rows, 2});
  OwnedTensor sum = reducescatter("reducescatter", input);
  int64_t mine = me == 0 ? 3 : 2;
  int64_t first_row = me == 0 ? 0 : 3 + 2 * (me - 1);
  check(sum.shape == Shape{mine, 2}, "reducescatter block shape");
  float ranks_sum = static_cast<float>(n * (n - 1) / 2);
  for (int64_t i = 0; i < mine * 2; ++i) {
    float index = static_cast<float>(first_row * 2 + i);
    check(sum.as<float>()[static_cast<size_t>(i)] == index * n + ranks_sum,
          "reducescatter sum of element " + std::to_string(i));
  }
  OwnedTensor avg = reducescatter("reducescatter avg", input, {ReduceOp::kAverage, 2.0});
  float index0 = static_cast<float>(first_row * 2);
  check(avg.as<float>()[0] == 2.0f * (index0 * n + ranks_sum) / n,
        "reducescatter prescaled average");
  check(data[0] == static_cast<float>(me), "reducescatter leaves its input alone");
}

void check_process_sets() {
  int n = cohort::size(), me = cohort::rank();
  std::vector<int> tail(static_cast<size_t>(n - 1));
  std::iota(tail.begin(), tail.end(), 1);
  ProcessSet without_0 = add_process_set(tail);
  ProcessSet ends = add_process_set({n - 1, 0});
  check(process_set_ranks(ends) == std::vector<int>{0, n - 1}, "process set ranks are sorted");
  check(without_0.id != ends.id && without_0.id != 0, "process sets have distinct ids");

  std::vector<float> v(8, static_cast<float>(me));
  if (me == 0) {
    expect_error<InvalidArgument>(
        [&] { allreduce("not mine", Tensor::of(v), {.process_set = without_0}); },
        "is not a member of process set", "submitting to a set without this rank");
  } else {
    allreduce("tail sum", Tensor::of(v), {.process_set = without_0});
    check(v[0] == static_cast<float>(n * (n - 1) / 2), "allreduce over ranks 1..n-1");
    std::vector<float> avg(3, static_cast<float>(me));
    allreduce("tail avg", Tensor::of(avg), {ReduceOp::kAverage, 1.0, 1.0, without_0});
    check(avg[0] == static_cast<float>(n) / 2.0f, "average divides by the set's size");
  }
  if (me == 0 || me == n - 1) {
    std::vector<int32_t> b(5, me);
    broadcast("ends broadcast", Tensor::of(b), n - 1, ends);
    check(b[4] == n - 1, "broadcast from the set's last member");
    std::vector<int32_t> row(static_cast<size_t>(me) + 1, me);
    OwnedTensor all = allgather("ends gather", Tensor::of(row), ends);
    check(all.shape[0] == n + 1 && all.as<int32_t>()[0] == 0 && all.as<int32_t>()[1] == n - 1,
          "allgather over a set is in the set's rank order");
    barrier("ends barrier", ends);
    std::vector<int32_t> pair(4, me + 1);
    OwnedTensor part = reducescatter(
        "ends reducescatter", Tensor::of(std::span<int32_t>(pair), {4}), {.process_set = ends});
    check(part.shape == Shape{2} && part.as<int32_t>()[0] == n + 1, "reducescatter over a set");
    std::vector<int32_t> sent(2, me);
    AlltoallResult swapped = alltoall("ends alltoall", Tensor::of(sent), {}, ends);
    int other = me == 0 ? n - 1 : 0;
    check(swapped.output.as<int32_t>()[me == 0 ? 1 : 0] == other, "alltoall over a set");
  }
  // The world keeps working, and the same names can be reused in another set.
  std::vector<float> w(2, 1.0f);
  allreduce("tail sum", Tensor::of(w));
  check(w[0] == static_cast<float>(n), "the world after process-set work");
  expect_error<InvalidArgument>(
      [&] {
        add_process_set({0, n});
      },
      "distinct ranks", "process set with a rank out of range");
}

// remove_process_set: what every member submitted before it runs, what some member did not
// fails naming the set, and the id stays an error afterwards.
void check_remove_process_set() {
  int n = cohort::size(), me = cohort::rank();
  ProcessSet ends = add_process_set({0, n - 1});
  bool member = me == 0 || me == n - 1;
  std::vector<float> kept(4, 1.0f), stray(4, 1.0f);
  Handle kept_handle, stray_handle;
  if (member) kept_handle = allreduce_async("kept", Tensor::of(kept), {.process_set = ends});
  // Rank 0 submits a collective that the set's other member never does.
  if (me == 0) stray_handle = allreduce_async("stray", Tensor::of(stray), {.process_set = ends});
  remove_process_set(ends);
  if (member) {
    kept_handle.wait();
    check(kept[0] == 2.0f, "a collective every member submitted before the removal runs");
  }
  if (me == 0) {
    expect_error<MismatchError>([&] { stray_handle.wait(); },
                                "'stray' (process set " + str(ends.id) +
                                    ") cannot complete: process set " + str(ends.id) +
                                    " was removed",
                                "a collective pending at removal");
  }
  std::string removed = "process set " + str(ends.id) + " was removed";
  expect_error<InvalidArgument>([&] { barrier("after removal", ends); }, removed,
                                "a collective on a removed set");
  expect_error<InvalidArgument>([&] { process_set_ranks(ends); }, removed,
                                "the ranks of a removed set");
  expect_error<InvalidArgument>([&] { remove_process_set(ends); }, removed, "removing a set twice");
  expect_error<InvalidArgument>([&] { remove_process_set(ProcessSet{}); },
                                "the global process set (id 0) cannot be removed",
                                "removing the global set");
  ProcessSet again = add_process_set({0, n - 1});
  check(again.id > ends.id, "a removed set's id is not reused");
  if (member) barrier("re-added", again);
  remove_process_set(again);
}

}  // namespace

int main() {
  g_program = "engine_check";
  cohort::init();
  if (cohort::size() < 2) fail("needs at least 2 ranks");
  check_grouped_allreduce();
  check_join_uneven_steps();
  check_join_identity_and_errors();
  check_alltoall();
  check_reducescatter();
  check_process_sets();
  check_remove_process_set();
  int rank = cohort::rank();
  cohort::shutdown();
  std::cout << "rank " << rank << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
