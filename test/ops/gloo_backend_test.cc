// The Gloo backend with 2-4 ranks as threads of one process, over real loopback TCP.
#include <gloo/rendezvous/hash_store.h>

#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <thread>

#include "cohort/errors.h"
#include "ops/gloo_backend.h"
#include "ops/half.h"

using namespace cohort;
using namespace cohort::ops;

namespace {

// Runs `body(backend)` on `size` ranks at once; rethrows the first failure.
void on_ranks(int size, const std::function<void(Backend&)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(size);
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto backend = make_gloo_backend({.rank = rank, .size = size, .prefix = "t"}, store);
        body(*backend);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

template <typename T>
T value(int rank, size_t i) {
  return static_cast<T>(static_cast<int>((rank * 3 + i) % 5) + 1);
}

}  // namespace

TEST_CASE("allreduce matches a local reduction for every type and op and rank count") {
  for (int size : {2, 3, 4}) {
    on_ranks(size, [&](Backend& b) {
      for (size_t n : {size_t{1}, size_t{1000}, size_t{300000}}) {
        std::vector<int32_t> ints(n);
        std::vector<double> doubles(n);
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
          for (size_t i = 0; i < n; ++i) ints[i] = value<int32_t>(b.rank(), i);
          for (size_t i = 0; i < n; ++i) doubles[i] = value<double>(b.rank(), i);
          b.allreduce(ints.data(), n, DataType::kInt32, op, {"ints", true});
          b.allreduce(doubles.data(), n, DataType::kFloat64, op, {"doubles", true});
          for (size_t i = 0; i < n; i += 997) {
            int64_t want = value<int64_t>(0, i);
            for (int r = 1; r < size; ++r) {
              int64_t v = value<int64_t>(r, i);
              want = op == ReduceOp::kSum   ? want + v
                     : op == ReduceOp::kMin ? std::min(want, v)
                     : op == ReduceOp::kMax ? std::max(want, v)
                                            : want * v;
            }
            REQUIRE(ints[i] == want);
            REQUIRE(doubles[i] == static_cast<double>(want));
          }
        }
      }
    });
  }
}

TEST_CASE("16-bit floats and bools reduce through our kernels") {
  on_ranks(3, [](Backend& b) {
    std::vector<uint16_t> h(100, float_to_float16(1.5f));
    b.allreduce(h.data(), h.size(), DataType::kFloat16, ReduceOp::kSum, {"h", true});
    CHECK(float16_to_float(h[99]) == 4.5f);
    std::vector<uint16_t> bf(100, float_to_bfloat16(static_cast<float>(b.rank())));
    b.allreduce(bf.data(), bf.size(), DataType::kBFloat16, ReduceOp::kMax, {"bf", true});
    CHECK(bfloat16_to_float(bf[0]) == 2.0f);
    std::vector<uint8_t> flags(10, b.rank() == 1 ? 1 : 0);
    b.allreduce(flags.data(), flags.size(), DataType::kBool, ReduceOp::kSum, {"or", true});
    CHECK(flags[0] == 1);
    b.allreduce(flags.data(), flags.size(), DataType::kBool, ReduceOp::kProduct, {"and", true});
    CHECK(flags[0] == 1);
  });
}

TEST_CASE("reused and changed buffers stay consistent across ranks") {
  on_ranks(3, [](Backend& b) {
    std::vector<std::vector<float>> buffers(2, std::vector<float>(64));
    for (int step = 0; step < 20; ++step) {
      // Rank 0 alternates between two buffers, the others keep one: the engine tells every
      // rank to rebind whenever any rank's memory changed.
      auto& buf = buffers[b.rank() == 0 ? step % 2 : 0];
      std::fill(buf.begin(), buf.end(), static_cast<float>(step));
      b.allreduce(buf.data(), buf.size(), DataType::kFloat32, ReduceOp::kSum, {"grad", true});
      REQUIRE(buf[63] == 3.0f * step);
    }
    std::vector<float> stable(64, 1.0f);
    for (int step = 0; step < 20; ++step) {
      std::fill(stable.begin(), stable.end(), 1.0f);
      b.allreduce(stable.data(), stable.size(), DataType::kFloat32, ReduceOp::kSum,
                  {"stable", step == 0});
      REQUIRE(stable[0] == 3.0f);
    }
  });
}

TEST_CASE("broadcast and allgatherv and barrier") {
  on_ranks(4, [](Backend& b) {
    for (int root = 0; root < b.size(); ++root) {
      std::vector<int64_t> data(1000, b.rank());
      b.broadcast(data.data(), data.size() * sizeof(int64_t), root);
      REQUIRE(data[999] == root);
    }
    std::vector<size_t> counts = {0, 3, 1, 5};  // rank 0 contributes nothing
    std::vector<char> mine(counts[b.rank()], static_cast<char>('a' + b.rank()));
    std::vector<char> all(9);
    b.allgatherv(mine.data(), all.data(), counts);
    CHECK(std::string(all.begin(), all.end()) == "bbbcddddd");
    b.barrier();
  });
}

TEST_CASE("a world of one needs no peers") {
  on_ranks(1, [](Backend& b) {
    float x = 2;
    b.allreduce(&x, 1, DataType::kFloat32, ReduceOp::kSum, {"x", true});
    CHECK(x == 2);
    b.barrier();
  });
}
