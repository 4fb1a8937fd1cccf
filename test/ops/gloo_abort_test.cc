// Aborting Gloo collectives from another thread, as the heartbeat does: the backend's abort
// (sockets shut down, ops/gloo_interrupt.h) and the wait breaker (ops/gloo_wait_breaker.h) that
// ends the waits a failed connection leaves behind.
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <future>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cohort/errors.h"
#include "ops/gloo_backend.h"
#include "ops/gloo_wait_breaker.h"

using namespace cohort;
using namespace cohort::ops;

TEST_CASE("gloo wait breaker ends waits that no connection will end, until the collective ends") {
  // No peer will ever send or receive: only the breaker can end these waits before their 60 s.
  gloo::rendezvous::HashStore store;
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto context = std::make_shared<gloo::rendezvous::Context>(0, 1);
  auto device = gloo::transport::tcp::CreateDevice(attr);
  context->connectFullMesh(store, device);
  GlooWaitBreaker breaker;
  std::latch registered(1);
  auto waits = std::async(std::launch::async, [&] {
    GlooWaitBreaker::InFlight in_flight(breaker);
    char byte = 0;
    auto buffer = context->createUnboundBuffer(&byte, 1);
    GlooWaitBreaker::Watch watch(in_flight, {buffer.get()});
    registered.count_down();
    // Each wait spends the flag the one before it left: all three end only if it is set again.
    std::vector<bool> completed;
    completed.push_back(buffer->waitRecv(std::chrono::seconds(60)));
    completed.push_back(buffer->waitSend(std::chrono::seconds(60)));
    completed.push_back(buffer->waitRecv(std::chrono::seconds(60)));
    return completed;
  });
  registered.wait();
  breaker.break_waits();
  REQUIRE(waits.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(waits.get() == std::vector<bool>{false, false, false});
}

TEST_CASE("gloo abort from another thread ends a blocked collective at once, naming the reason") {
  // Ranks 0 and 1 allreduce; rank 2 never joins (frozen). Another thread aborts ranks 0 and 1, as
  // the heartbeat does, whether they are inside the allreduce yet or not: both must fail with the
  // reason, long before Gloo's 20 s timeout.
  // Gloo writes to the shut sockets without MSG_NOSIGNAL; the runtime ignores SIGPIPE (api.cc).
  std::signal(SIGPIPE, SIG_IGN);
  gloo::rendezvous::HashStore store;
  std::vector<std::unique_ptr<Backend>> backends(3);
  std::latch connected(4);
  std::promise<void> finished;
  auto done = finished.get_future().share();
  std::vector<std::string> errors(2);
  std::vector<std::chrono::steady_clock::duration> took(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 3; ++rank) {
    ranks.emplace_back([&, rank] {
      backends[rank] = make_gloo_backend(
          {.rank = rank, .size = 3, .prefix = "abort", .timeout = std::chrono::seconds(20)}, store);
      connected.count_down();
      if (rank == 2) {
        done.wait();
        return;
      }
      std::vector<float> data(1 << 18, 1.0f);
      auto start = std::chrono::steady_clock::now();
      try {
        backends[rank]->allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
                                  {"blocked", true});
      } catch (const InternalError& e) {
        errors[rank] = e.what();
      }
      took[rank] = std::chrono::steady_clock::now() - start;
    });
  }
  connected.arrive_and_wait();
  backends[0]->abort("rank 2 is frozen");
  backends[1]->abort("rank 2 is frozen");
  ranks[0].join();
  ranks[1].join();
  finished.set_value();
  ranks[2].join();
  // Rank 0, aborted first, fails with the reason. Rank 1 may see rank 0's sockets close before
  // its own abort comes (a loaded machine): then it fails on that, just as fast.
  CHECK_THAT(errors[0], Catch::Matchers::Contains("interrupted: rank 2 is frozen"));
  CHECK_THAT(errors[1], Catch::Matchers::Contains("interrupted: rank 2 is frozen") ||
                            Catch::Matchers::Contains("Connection closed by peer") ||
                            Catch::Matchers::Contains("Connection reset by peer"));
  for (int rank = 0; rank < 2; ++rank) CHECK(took[rank] < std::chrono::seconds(5));
  // Later operations are refused at once.
  CHECK_THROWS_WITH(backends[0]->barrier(), Catch::Matchers::Contains("rank 2 is frozen"));
}
