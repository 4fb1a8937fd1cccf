// The checks every backend passes, run by the multi-process check programs (MPI, Gloo under
// cohortrun and mpirun, NCCL): allreduce and reduce-scatter of every DataType x ReduceOp
// (uneven, even and zero counts), broadcast from every root, allgatherv (uneven with an empty
// contribution, and even), alltoallv with uneven and zero counts, splits into subsets in
// sequence while the parent keeps working, barrier, and argument errors. Each mismatch is
// printed (naming dtype, op and counts) and counted.
#pragma once

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "cohort/errors.h"
#include "collective_matrix.h"

namespace cohort::ops::testing {

class BackendChecks {
 public:
  explicit BackendChecks(Backend& backend) : b_(backend) {}

  int failures() const { return failures_; }

  void run_all() {
    allreduce();
    broadcast();
    allgatherv();
    alltoallv();
    reduce_scatter();
    split();
    errors();
    b_.barrier();
  }

  void expect(bool ok, const std::string& what) {
    if (ok) return;
    std::fprintf(stderr, "rank %d of %d (%s): %s\n", b_.rank(), b_.size(),
                 std::string(b_.name()).c_str(), what.c_str());
    ++failures_;
  }

  void allreduce() {
    std::string error = check_allreduce_matrix(b_, {0, 1, 7, 33, 1000}, size_t{1} << 20);
    expect(error.empty(), error);
  }

  void broadcast() {
    for (int root = 0; root < b_.size(); ++root) {
      std::vector<int64_t> data(100000, b_.rank() == root ? root + 10 : -1);
      b_.broadcast(data.data(), data.size() * sizeof(int64_t), root);
      expect(data.front() == root + 10 && data.back() == root + 10,
             "broadcast from root " + std::to_string(root));
    }
  }

  void allgatherv() {
    // Uneven with nothing from rank 0 (rank r > 0 gives r + 2 bytes), then even.
    for (bool even : {false, true}) {
      std::vector<size_t> counts(b_.size());
      for (int r = 0; r < b_.size(); ++r) counts[r] = even ? 5 : (r == 0 ? 0 : r + 2);
      std::vector<char> mine(counts[b_.rank()], static_cast<char>(b_.rank()));
      std::vector<char> all(std::accumulate(counts.begin(), counts.end(), size_t{0}), -1);
      b_.allgatherv(mine.data(), all.data(), counts);
      for (size_t at = 0, r = 0; r < counts.size(); ++r) {
        for (size_t i = 0; i < counts[r]; ++i, ++at) {
          expect(all[at] == static_cast<char>(r), "allgatherv byte " + std::to_string(at));
        }
      }
    }
  }

  void alltoallv() {
    for (size_t scale : {size_t{1}, size_t{3}, size_t{50001}}) {
      std::string error = check_alltoallv_matrix(b_, scale);
      expect(error.empty(), error);
    }
    std::string error = check_alltoallv_matrix(b_, 7, b_.size() - 1);
    expect(error.empty(), "with an idle rank: " + error);
  }

  void reduce_scatter() {
    // Uneven with an empty block for rank 1, even, and all empty.
    const size_t pattern[] = {3, 0, 5, 1};
    for (size_t scale : {size_t{0}, size_t{1}, size_t{20011}}) {
      std::vector<size_t> uneven, even(b_.size(), scale + 2);
      for (int r = 0; r < b_.size(); ++r) uneven.push_back(pattern[r % 4] * scale + (r == 0));
      for (const auto& counts : {uneven, even}) {
        std::string error = check_reduce_scatter_matrix(b_, counts);
        expect(error.empty(), error);
      }
    }
  }

  // A split of the last two ranks, then of the first and last (just rank 0 in a world of one);
  // the parent works between and after them.
  void split() {
    int last = b_.size() - 1;
    int first_of_tail = std::max(0, last - 1);
    std::vector<int> tail(static_cast<size_t>(last - first_of_tail + 1));
    std::iota(tail.begin(), tail.end(), first_of_tail);
    if (b_.rank() >= first_of_tail) {
      auto sub = b_.split(tail, "tail");
      expect(
          sub->size() == static_cast<int>(tail.size()) && sub->rank() == b_.rank() - first_of_tail,
          "split renumbering");
      std::string error = check_allreduce_matrix(*sub, {1, 33});
      expect(error.empty(), "split tail: " + error);
      int root = sub->size() - 1;
      int64_t value = sub->rank() == root ? 42 : -1;
      sub->broadcast(&value, sizeof value, root);
      expect(value == 42, "broadcast on a split");
      sub->barrier();
    }
    std::string error = check_allreduce_matrix(b_, {7});
    expect(error.empty(), "parent after a split: " + error);
    std::vector<int> ends = {0};
    if (last > 0) ends.push_back(last);
    if (b_.rank() == 0 || b_.rank() == last) {
      auto sub = b_.split(ends, "ends");
      std::vector<size_t> counts = {2, 3};
      counts.resize(ends.size());
      error = check_reduce_scatter_matrix(*sub, counts);
      expect(error.empty(), "split ends: " + error);
      error = check_alltoallv_matrix(*sub, 2);
      expect(error.empty(), "split ends: " + error);
      sub->barrier();
    }
    error = check_alltoallv_matrix(b_, 2);
    expect(error.empty(), "parent after two splits: " + error);
  }

  void errors() {
    float x = 1;
    expect_invalid("allreduce with average", [&] {
      b_.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {"x", true});
    });
    std::vector<float> in(b_.size() + 8), out(b_.size() + 8);
    std::vector<size_t> right(b_.size(), 1), wrong(b_.size() + 1, 1);
    expect_invalid("alltoallv with a count too many",
                   [&] { b_.alltoallv(in.data(), wrong, out.data(), right); });
    expect_invalid("reduce_scatter with a count too many", [&] {
      b_.reduce_scatter(in.data(), out.data(), wrong, DataType::kFloat32, ReduceOp::kSum);
    });
    expect_invalid("reduce_scatter with average", [&] {
      b_.reduce_scatter(in.data(), out.data(), right, DataType::kFloat32, ReduceOp::kAverage);
    });
    expect_invalid("broadcast from a root beyond the world",
                   [&] { b_.broadcast(&x, sizeof x, b_.size()); });
    expect_invalid("broadcast from a negative root", [&] { b_.broadcast(&x, sizeof x, -1); });
    expect_invalid("allgatherv with a count too many",
                   [&] { b_.allgatherv(in.data(), out.data(), wrong); });
    std::vector<int> beyond = {b_.rank(), b_.size()};
    expect_invalid("split beyond the world", [&] { b_.split(beyond, "x"); });
  }

 private:
  template <typename F>
  void expect_invalid(const char* what, F&& f) {
    try {
      f();
      expect(false, std::string(what) + " did not throw InvalidArgument");
    } catch (const InvalidArgument&) {
    }
  }

  Backend& b_;
  int failures_ = 0;
};

}  // namespace cohort::ops::testing
