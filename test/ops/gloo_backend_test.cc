// The Gloo backend with 1-4 ranks as threads of one process, over real loopback TCP, rendezvous
// through an in-process HashStore.
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cohort/errors.h"
#include "collective_matrix.h"
#include "gloo_ranks.h"
#include "ops/gloo_allreduce.h"
#include "ops/gloo_backend.h"
#include "ops/gloo_reduce_scatter.h"

using namespace cohort;
using namespace cohort::ops;
using namespace cohort::ops::testing;

namespace {

template <typename E, typename F>
void ensure_throws(F&& f, const std::string& what) {
  try {
    f();
  } catch (const E&) {
    return;
  }
  throw std::runtime_error(what + " did not throw");
}

// Per-rank counts for the reduce-scatter checks, scaled: uneven, with a rank that has nothing.
std::vector<size_t> uneven_counts(int size, size_t scale) {
  const size_t pattern[] = {3, 0, 5, 1};
  std::vector<size_t> counts;
  for (int r = 0; r < size; ++r) counts.push_back(pattern[r] * scale + (r == 0 ? 1 : 0));
  return counts;
}

void check_matrix(int size) {
  on_ranks(size, [](Backend& b) {
    // 1 MiB and up runs the large-message code paths and several segments of each algorithm.
    std::string error = check_allreduce_matrix(b, {1, 7, 33, 1000}, size_t{1} << 20);
    ensure(error.empty(), error);
  });
}

}  // namespace

TEST_CASE("gloo allreduce every type and op on 2 ranks") {
  check_matrix(2);
}
TEST_CASE("gloo allreduce every type and op on 3 ranks") {
  check_matrix(3);
}
TEST_CASE("gloo allreduce every type and op on 4 ranks") {
  check_matrix(4);
}

TEST_CASE("gloo allreduce of 8 MiB and more takes the ring on 3 ranks") {
  REQUIRE(choose_gloo_allreduce(1, 8 << 20, 3) == GlooAllreduceAlgorithm::kRing);
  REQUIRE(choose_gloo_allreduce(1, (8 << 20) - 1, 3) == GlooAllreduceAlgorithm::kHalvingDoubling);
  REQUIRE(choose_gloo_allreduce(1, 256 << 20, 2) == GlooAllreduceAlgorithm::kHalvingDoubling);
  REQUIRE(choose_gloo_allreduce(1, 256 << 20, 4) == GlooAllreduceAlgorithm::kHalvingDoubling);
  on_ranks(3, [](Backend& b) {
    std::vector<std::byte> buffer;
    for (DataType d : {DataType::kFloat32, DataType::kBFloat16}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin}) {
        size_t count = (size_t{8} << 20) / element_size(d) + 5;
        auto error = check_allreduce(b.rank(), 3, d, op, count, buffer, [&](void* data) {
          b.allreduce(data, count, d, op, {"large", true});
        });
        ensure(error.empty(), error);
      }
    }
  });
}

TEST_CASE("gloo every allreduce algorithm on 3 ranks") {
  // Exercises the algorithms the size policy picks only for large messages, on small ones too.
  gloo::rendezvous::HashStore store;
  on_threads(3, [&](int rank) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, 3);
    context->setTimeout(std::chrono::seconds(20));
    auto device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(store, device);
    std::vector<std::byte> buffer;
    uint32_t tag = 0;
    for (auto algorithm : {GlooAllreduceAlgorithm::kHalvingDoubling,
                           GlooAllreduceAlgorithm::kRingChunked, GlooAllreduceAlgorithm::kRing}) {
      for (DataType d : {DataType::kFloat16, DataType::kInt64, DataType::kBool}) {
        for (ReduceOp op : kAllOps) {
          for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
            auto error = check_allreduce(rank, 3, d, op, count, buffer, [&](void* data) {
              if (algorithm == GlooAllreduceAlgorithm::kRing) {
                GlooWaitBreaker breaker;
                GlooWaitBreaker::InFlight in_flight(breaker);
                run_gloo_ring_allreduce(context, data, count, d, op, tag++, in_flight);
              } else {
                make_gloo_allreduce(algorithm, context, data, count, d, op)->run();
              }
            });
            ensure(error.empty(),
                   "algorithm " + std::to_string(static_cast<int>(algorithm)) + ": " + error);
          }
        }
      }
    }
  });
}

TEST_CASE("gloo allreduce reuses cached algorithms and rebuilds on rebind") {
  on_ranks(3, [](Backend& b) {
    std::vector<std::vector<float>> buffers(2, std::vector<float>(64));
    for (int step = 0; step < 20; ++step) {
      // Rank 0 alternates between two buffers, the others keep one: the engine tells every
      // rank to rebind whenever any rank's memory changed.
      auto& buf = buffers[b.rank() == 0 ? step % 2 : 0];
      std::fill(buf.begin(), buf.end(), static_cast<float>(step));
      b.allreduce(buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum, {"grad", true});
      ensure(buf[63] == 3.0f * step, "buf[63] == 3.0f * step");
    }
    // Cache hits: same binding, same memory, interleaved with another binding.
    std::vector<float> stable(64);
    std::vector<int32_t> other(1000);
    for (int step = 0; step < 20; ++step) {
      std::fill(stable.begin(), stable.end(), 1.0f);
      std::fill(other.begin(), other.end(), b.rank());
      b.allreduce(stable.data(), stable.size(), DataType::kFloat32, ReduceOp::kSum,
                  {"stable", step == 0});
      b.allreduce(other.data(), other.size(), DataType::kInt32, ReduceOp::kMax,
                  {"other", step == 0});
      ensure(stable[0] == 3.0f, "stable[0] == 3.0f");
      ensure(other[999] == 2, "other[999] == 2");
    }
  });
}

TEST_CASE("gloo allreduce refuses a moved buffer that was not rebound") {
  on_ranks(2, [](Backend& b) {
    std::vector<float> first(8, 1.0f), second(8, 1.0f);
    b.allreduce(first.data(), 8, DataType::kFloat32, ReduceOp::kSum, {"x", true});
    // Every rank makes the same mistake, so no rank waits for a peer.
    ensure_throws<InternalError>(
        [&] {
          b.allreduce(second.data(), 8, DataType::kFloat32, ReduceOp::kSum, {"x", false});
        },
        "b.allreduce(second.data(), 8, DataType::kFloat32, ReduceOp::kSum, {\"x\", false})");
  });
}

TEST_CASE("gloo broadcast from every root") {
  on_ranks(4, [](Backend& b) {
    for (int root = 0; root < b.size(); ++root) {
      for (size_t n : {size_t{1}, size_t{1000}, size_t{300000}}) {
        std::vector<int64_t> data(n, b.rank());
        b.broadcast(data.data(), data.size() * sizeof(int64_t), root);
        ensure(data.front() == root, "data.front() == root");
        ensure(data.back() == root, "data.back() == root");
      }
    }
    b.broadcast(nullptr, 0, 1);  // nothing to send
  });
}

TEST_CASE("gloo allgatherv with empty contributions and barrier") {
  on_ranks(4, [](Backend& b) {
    std::vector<size_t> counts = {0, 3, 1, 5};  // rank 0 contributes nothing
    std::vector<char> mine(counts[b.rank()], static_cast<char>('a' + b.rank()));
    std::vector<char> all(9);
    b.allgatherv(mine.data(), all.data(), counts);
    ensure(std::string(all.begin(), all.end()) == "bbbcddddd",
           "std::string(all.begin(), all.end()) == \"bbbcddddd\"");
    std::vector<size_t> nothing(4, 0);
    b.allgatherv(nullptr, nullptr, nothing);
    std::vector<size_t> big = {100000, 0, 70000, 1};
    std::vector<uint8_t> part(big[b.rank()], static_cast<uint8_t>(b.rank() + 1));
    std::vector<uint8_t> whole(170001);
    b.allgatherv(part.data(), whole.data(), big);
    ensure(whole[99999] == 1, "whole[99999] == 1");
    ensure(whole[100000] == 3, "whole[100000] == 3");
    ensure(whole[170000] == 4, "whole[170000] == 4");
    for (int i = 0; i < 5; ++i) b.barrier();
  });
}

TEST_CASE("gloo rejects bad arguments without communicating") {
  on_ranks(2, [](Backend& b) {
    float x = 1;
    ensure_throws<InvalidArgument>(
        [&] {
          b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {"x", true});
        },
        "b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kAverage, {\"x\", true})");
    ensure_throws<InvalidArgument>([&] { b.broadcast(&x, sizeof x, 2); },
                                   "b.broadcast(&x, sizeof x, 2)");
    std::vector<size_t> counts(3, 0);
    ensure_throws<InvalidArgument>([&] { b.allgatherv(&x, &x, counts); },
                                   "b.allgatherv(&x, &x, counts)");
    b.allreduce(nullptr, 0, DataType::kFloat32, ReduceOp::kSum, {"empty", true});
    b.barrier();
  });
}

TEST_CASE("gloo world of one needs no peers") {
  on_ranks(1, [](Backend& b) {
    float x = 2;
    b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kSum, {"x", true});
    ensure(x == 2, "x == 2");
    char in[3] = {'a', 'b', 'c'}, out[3] = {};
    size_t counts[1] = {3};
    b.allgatherv(in, out, counts);
    ensure(out[2] == 'c', "out[2] == 'c'");
    b.broadcast(in, 3, 0);
    b.barrier();
  });
}

TEST_CASE("gloo alltoallv with uneven and zero counts") {
  for (int size = 1; size <= 4; ++size) {
    on_ranks(size, [](Backend& b) {
      for (size_t scale : {size_t{1}, size_t{3}, size_t{50001}}) {
        auto error = check_alltoallv_matrix(b, scale);
        ensure(error.empty(), error);
      }
      // One rank neither sends nor receives anything, yet takes part.
      auto error = check_alltoallv_matrix(b, 7, b.size() - 1);
      ensure(error.empty(), error);
    });
  }
}

TEST_CASE("gloo reduce_scatter every type and op with uneven counts") {
  for (int size = 1; size <= 4; ++size) {
    on_ranks(size, [size](Backend& b) {
      // Below gloo_reduce_scatter_uses_ring's threshold: the allreduce path. All-zero counts do
      // nothing.
      for (size_t scale : {size_t{0}, size_t{1}, size_t{7}, size_t{20011}}) {
        auto error = check_reduce_scatter_matrix(b, uneven_counts(size, scale));
        ensure(error.empty(), error);
      }
      auto error = check_reduce_scatter_matrix(b, std::vector<size_t>(size, 1000));
      ensure(error.empty(), error);
    });
  }
}

TEST_CASE("gloo reduce_scatter above the ring threshold") {
  for (int size = 2; size <= 4; ++size) {
    on_ranks(size, [size](Backend& b) {
      for (DataType d : kAllTypes) {
        // Uneven counts whose whole input just exceeds 2 MiB.
        auto unit = uneven_counts(size, 1);
        size_t per_scale = std::accumulate(unit.begin(), unit.end(), size_t{0}) - 1;
        auto counts = uneven_counts(size, (size_t{2} << 20) / element_size(d) / per_scale + 1);
        size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
        ensure(gloo_reduce_scatter_uses_ring(total * element_size(d), size), "takes the ring");
        for (ReduceOp op : kAllOps) {
          auto error = check_reduce_scatter(
              b.rank(), size, d, op, counts,
              [&](const void* in, void* out) { b.reduce_scatter(in, out, counts, d, op); });
          ensure(error.empty(), error);
        }
      }
    });
  }
}

TEST_CASE("gloo reduce_scatter ring with small uneven counts on 2-4 ranks") {
  // Runs the ring directly at sizes the backend would allreduce instead.
  for (int size = 2; size <= 4; ++size) {
    gloo::rendezvous::HashStore store;
    on_threads(size, [&](int rank) {
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(std::chrono::seconds(20));
      auto device = gloo::transport::tcp::CreateDevice(attr);
      context->connectFullMesh(store, device);
      std::vector<std::byte> scratch;
      uint32_t tag = 0;
      for (auto counts : {uneven_counts(size, 1), uneven_counts(size, 33),
                          std::vector<size_t>(size, 0), std::vector<size_t>(size, 2)}) {
        for (DataType d : kAllTypes) {
          for (ReduceOp op : kAllOps) {
            auto error =
                check_reduce_scatter(rank, size, d, op, counts, [&](const void* in, void* out) {
                  GlooWaitBreaker breaker;
                  GlooWaitBreaker::InFlight in_flight(breaker);
                  run_gloo_ring_reduce_scatter(context, in, out, counts, d, op, tag++, scratch,
                                               in_flight);
                });
            ensure(error.empty(), error);
          }
        }
      }
    });
  }
}

TEST_CASE("gloo split into subsets while the parent keeps working") {
  on_ranks(3, [](Backend& b) {
    std::vector<std::byte> buffer;
    if (b.rank() != 0) {
      const int members[] = {1, 2};
      auto sub = b.split(members, "pair");
      ensure(sub->size() == 2 && sub->rank() == b.rank() - 1, "ranks {1,2} of 3 renumbered");
      auto error = check_allreduce_matrix(*sub, {1, 33});
      ensure(error.empty(), "split {1,2}: " + error);
      int64_t value = sub->rank() == 1 ? 42 : 0;
      sub->broadcast(&value, sizeof value, 1);
      ensure(value == 42, "broadcast on split {1,2}");
      sub->barrier();
    }
    // The parent, used by every rank again, then a second split of another set.
    auto error = check_allreduce_matrix(b, {7});
    ensure(error.empty(), "parent after split: " + error);
    if (b.rank() != 1) {
      const int ends[] = {0, 2};
      auto sub = b.split(ends, "ends");
      error = check_reduce_scatter_matrix(*sub, {2, 3});
      ensure(error.empty(), "split {0,2}: " + error);
      sub->barrier();
    }
    error = check_alltoallv_matrix(b, 2);
    ensure(error.empty(), "parent after two splits: " + error);
  });
  on_ranks(4, [](Backend& b) {
    if (b.rank() == 1) return;  // the one non-member goes straight to the final barrier
    const int members[] = {0, 2, 3};
    auto sub = b.split(members, "three");
    ensure(sub->size() == 3, "{0,2,3} of 4 has three ranks");
    auto error = check_allreduce_matrix(*sub, {1, 1000});
    ensure(error.empty(), "split {0,2,3}: " + error);
    for (int root = 0; root < 3; ++root) {
      std::vector<int32_t> data(1000, sub->rank() == root ? root + 10 : -1);
      sub->broadcast(data.data(), data.size() * sizeof(int32_t), root);
      ensure(data.front() == root + 10 && data.back() == root + 10, "broadcast on {0,2,3}");
    }
    error = check_alltoallv_matrix(*sub, 5);
    ensure(error.empty(), "split {0,2,3}: " + error);
    // A split of a split, one rank alone.
    const int alone[] = {sub->rank()};
    auto single = sub->split(alone, "alone." + std::to_string(sub->rank()));
    ensure(single->size() == 1, "split of one rank");
    float x = 3;
    single->allreduce(&x, 1, DataType::kFloat32, ReduceOp::kSum, {"x", true});
    ensure(x == 3, "allreduce alone");
    sub->barrier();
  });
}

TEST_CASE("gloo new operations reject bad arguments without communicating") {
  on_ranks(2, [](Backend& b) {
    std::vector<float> in(8), out(8);
    std::vector<size_t> three(3, 1), two(2, 1);
    ensure_throws<InvalidArgument>([&] { b.alltoallv(in.data(), three, out.data(), two); },
                                   "alltoallv with 3 send counts");
    ensure_throws<InvalidArgument>([&] { b.alltoallv(in.data(), two, out.data(), three); },
                                   "alltoallv with 3 receive counts");
    std::vector<size_t> self_mismatch = {1, 1};
    self_mismatch[b.rank()] = 2;
    ensure_throws<InvalidArgument>([&] { b.alltoallv(in.data(), self_mismatch, out.data(), two); },
                                   "alltoallv sending itself another count than it receives");
    ensure_throws<InvalidArgument>(
        [&] { b.reduce_scatter(in.data(), out.data(), three, DataType::kFloat32, ReduceOp::kSum); },
        "reduce_scatter with 3 counts");
    ensure_throws<InvalidArgument>(
        [&] {
          b.reduce_scatter(in.data(), out.data(), two, DataType::kFloat32, ReduceOp::kAverage);
        },
        "reduce_scatter with average");
    ensure_throws<InvalidArgument>(
        [&] {
          b.reduce_scatter(in.data(), in.data() + 1, two, DataType::kFloat32, ReduceOp::kSum);
        },
        "reduce_scatter into its input");
    const int unsorted[] = {1, 0}, other[] = {1 - b.rank()}, outside[] = {0, 1, 2};
    ensure_throws<InvalidArgument>([&] { b.split(unsorted, "u"); }, "split of unsorted ranks");
    ensure_throws<InvalidArgument>([&] { b.split(other, "o"); }, "split without the caller");
    ensure_throws<InvalidArgument>([&] { b.split(outside, "x"); }, "split beyond the world");
    b.barrier();
  });
}

TEST_CASE("gloo new operations in a world of one") {
  on_ranks(1, [](Backend& b) {
    auto error = check_alltoallv_matrix(b, 5);
    ensure(error.empty(), error);
    error = check_reduce_scatter_matrix(b, {6});
    ensure(error.empty(), error);
    const int self[] = {0};
    auto sub = b.split(self, "self");
    ensure(sub->size() == 1 && sub->rank() == 0, "split {0} of 1");
    error = check_reduce_scatter_matrix(*sub, {4});
    ensure(error.empty(), error);
  });
}
