// Gloo builds a full mesh through GlooStore, as the runtime does, and reduces over it.
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <catch2/catch.hpp>
#include <thread>

#include "rendezvous/client.h"
#include "rendezvous/gloo_store.h"
#include "rendezvous/server.h"

using namespace cohort::rendezvous;
using namespace std::chrono_literals;

namespace {

const std::string kSecret(32, 'g');

float reduce_as_rank(int port, int rank, int size) {
  RendezvousClient client("127.0.0.1", port, kSecret, 10s);
  GlooStore store(client, 10s);
  gloo::rendezvous::PrefixStore prefixed("test", store);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(10s);
  context->connectFullMesh(prefixed, device);
  float x = static_cast<float>(rank + 1);
  gloo::AllreduceHalvingDoubling<float>(context, {&x}, 1).run();
  // No rank may close its connections while another still finishes the reduction.
  gloo::BarrierOptions done(context);
  gloo::barrier(done);
  return x;
}

}  // namespace

TEST_CASE("Gloo connects a full mesh through the store and reduces over it") {
  int size = GENERATE(2, 3);
  RendezvousServer server("127.0.0.1", kSecret);
  std::vector<float> results(size);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < size; ++rank) {
    ranks.emplace_back([&, rank] { results[rank] = reduce_as_rank(server.port(), rank, size); });
  }
  for (auto& t : ranks) t.join();
  float expected = static_cast<float>(size * (size + 1) / 2);
  CHECK(results == std::vector<float>(size, expected));
}

TEST_CASE("the store's wait fails after its timeout naming the missing key") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s);
  GlooStore store(client, 5s);
  store.set("here", {'x'});
  CHECK(store.get("here") == std::vector<char>{'x'});
  CHECK_THROWS_WITH(store.wait({"here", "missing"}, 50ms),
                    Catch::Matchers::Contains("key 'missing' was not set"));
}
