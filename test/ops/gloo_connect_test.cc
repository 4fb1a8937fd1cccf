// A Gloo connect that a cancellation abandons (ops/gloo_connect.h): wherever connectFullMesh
// waits for a peer that is not coming, the cancellation ends it at once with its reason, long
// before Gloo's own timeout.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <gloo/transport/tcp/address.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "base/cancellation.h"
#include "cohort/errors.h"
#include "ops/gloo_backend.h"
#include "rendezvous/client.h"
#include "rendezvous/gloo_store.h"
#include "rendezvous/server.h"

using namespace cohort;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kSecret(32, 'c');
constexpr auto kGlooTimeout = 20s;  // what the test must not wait for

// Tells the test when rank 0 has read rank 1's addresses: its last store call before it waits on
// its pairs.
class SignallingStore final : public gloo::rendezvous::Store {
 public:
  SignallingStore(gloo::rendezvous::Store& inner, std::promise<void>& read_peer)
      : inner_(inner), read_peer_(read_peer) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    inner_.set(key, data);
  }
  std::vector<char> get(const std::string& key) override {
    auto value = inner_.get(key);
    if (key == "round/1") read_peer_.set_value();
    return value;
  }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    inner_.wait(keys, timeout);
  }

 private:
  gloo::rendezvous::Store& inner_;
  std::promise<void>& read_peer_;
};

// Connects rank 0 of a world of 2 through `server`, in the background; the future gives how long
// make_gloo_backend took to fail.
struct Signals {
  std::promise<void> published;  // rank 0's addresses are in the store
  std::promise<void> read_peer;  // rank 0 has read rank 1's
};

std::future<Clock::duration> connect_rank0(int port, const Cancellation& cancel, Signals& signals) {
  return std::async(std::launch::async, [port, &cancel, &signals] {
    rendezvous::RendezvousClient client("127.0.0.1", port, kSecret, kGlooTimeout);
    rendezvous::GlooStore store(client, kGlooTimeout, &cancel);
    SignallingStore signalling(store, signals.read_peer);
    auto start = Clock::now();
    CHECK_THROWS_WITH(
        ops::make_gloo_backend({.rank = 0,
                                .size = 2,
                                .prefix = "round",
                                .timeout = kGlooTimeout,
                                .cancel = &cancel,
                                .on_published = [&] { signals.published.set_value(); }},
                               signalling),
        Catch::Matchers::Contains("member 1 died"));
    return Clock::now() - start;
  });
}

// The address block that a rank publishes for one pair: 127.0.0.1 at `port`.
std::string pair_address(uint16_t port) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  in->sin_family = AF_INET;
  in->sin_port = htons(port);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto bytes = gloo::transport::tcp::Address(ss).bytes();
  return {bytes.begin(), bytes.end()};
}

}  // namespace

TEST_CASE("a cancelled Gloo connect ends at once while it waits for a peer's addresses") {
  rendezvous::RendezvousServer server("127.0.0.1", kSecret);
  Cancellation cancel;
  Signals signals;
  auto took = connect_rank0(server.port(), cancel, signals);
  signals.published.get_future().wait();
  REQUIRE(server.await_waiting_gets(1, 10s));  // rank 0 waits in the store for rank 1
  cancel.cancel("member 1 died");
  CHECK(took.get() < 5s);
}

TEST_CASE("a cancelled Gloo connect ends at once while it listens for a peer that died") {
  rendezvous::RendezvousServer server("127.0.0.1", kSecret);
  // Rank 1 published its addresses and died before connecting. Its port compares above any of
  // rank 0's, so rank 0 is the pair's listening side: Gloo would wait there for its timeout.
  server.set("round/1", pair_address(65535));
  Cancellation cancel;
  Signals signals;
  auto took = connect_rank0(server.port(), cancel, signals);
  // Rank 0 is done with the store: all it has left is to wait for rank 1 to connect.
  signals.read_peer.get_future().wait();
  cancel.cancel("member 1 died");
  CHECK(took.get() < 5s);
}

TEST_CASE("a Gloo connect cancelled before it starts does not start") {
  rendezvous::RendezvousServer server("127.0.0.1", kSecret);
  Cancellation cancel;
  cancel.cancel("member 1 died");
  rendezvous::RendezvousClient client("127.0.0.1", server.port(), kSecret, kGlooTimeout);
  rendezvous::GlooStore store(client, kGlooTimeout, &cancel);
  CHECK_THROWS_AS(ops::make_gloo_backend({.rank = 0, .size = 2, .cancel = &cancel}, store),
                  InternalError);
}
