// The rendezvous server and client over real loopback sockets, including hostile requests.
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <catch2/catch.hpp>
#include <thread>

#include "discovery/frame_io.h"
#include "discovery/hmac.h"
#include "discovery/rendezvous_client.h"
#include "discovery/rendezvous_server.h"

using namespace cohort;
using namespace cohort::discovery;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

const std::string kSecret(32, 's');

// Sends one raw frame on a fresh connection; returns the reply, or "" if the server hung up.
std::string send_raw(int port, const std::string& frame) {
  Fd fd = connect_tcp("127.0.0.1", port, Clock::now() + 2s);
  write_frame(fd.get(), frame, Clock::now() + 2s);
  try {
    return read_frame(fd.get(), kMaxRendezvousFrame, Clock::now() + 2s);
  } catch (const Error&) {
    return "";
  }
}

RendezvousRequest set_request(const std::string& key) {
  return {.op = RendezvousOp::kSet,
          .nonce = random_bytes(kNonceSize),
          .timestamp_ms = unix_millis(),
          .key = key,
          .value = "v"};
}

}  // namespace

TEST_CASE("set, then get; a get waits on the server until another client sets") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient a("127.0.0.1", server.port(), kSecret, 5s);
  RendezvousClient b("127.0.0.1", server.port(), kSecret, 5s);
  a.set("k", "hello");
  CHECK(b.get("k", 1s) == "hello");
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);  // only to let the get below start waiting; not ordering
    a.set("late", "world");
  });
  CHECK(b.get("late", 5s) == "world");
  later.join();
  CHECK_THROWS_WITH(b.get("never", 100ms), Contains("was not set within 100 ms"));
}

TEST_CASE("forged, garbage, replayed and stale requests are rejected and change nothing") {
  RendezvousServer server("127.0.0.1", kSecret);
  int port = server.port();

  // Signed with the wrong key.
  CHECK(send_raw(port, seal_request(std::string(32, 'x'), set_request("forged"))).empty());
  // Unsigned garbage and a truncated MAC.
  CHECK(send_raw(port, "definitely not a request").empty());
  CHECK(send_raw(port, seal_request(kSecret, set_request("cut")).substr(0, 20)).empty());
  // A correct request replayed byte for byte: the first is served, the replay is not.
  std::string frame = seal_request(kSecret, set_request("once"));
  CHECK_FALSE(send_raw(port, frame).empty());
  CHECK(server.contains("once"));
  CHECK(send_raw(port, frame).empty());
  // A correctly signed request from the past.
  RendezvousRequest old = set_request("stale");
  old.timestamp_ms -= 120'000;
  CHECK(send_raw(port, seal_request(kSecret, old)).empty());

  CHECK(server.rejected() == 5);
  CHECK_FALSE(server.contains("forged"));
  CHECK_FALSE(server.contains("cut"));
  CHECK_FALSE(server.contains("stale"));
}

TEST_CASE("a client rejects a response not signed with the job secret") {
  int port = 0;
  Fd listener = listen_tcp("127.0.0.1", port);
  std::thread impostor([&] {
    Fd conn(::accept(listener.get(), nullptr, nullptr));
    std::string sealed = read_frame(conn.get(), kMaxRendezvousFrame, Clock::now() + 2s);
    RendezvousResponse lie{.nonce = std::string(kNonceSize, 'n'), .ok = true, .value = "evil"};
    write_frame(conn.get(), seal_response(std::string(32, 'x'), lie), Clock::now() + 2s);
  });
  RendezvousClient client("127.0.0.1", port, kSecret, 2s);
  CHECK_THROWS_WITH(client.get("k", 1s), Contains("unauthentic response"));
  impostor.join();
}

TEST_CASE("Gloo connects a full mesh through the store and reduces over it") {
  RendezvousServer server("127.0.0.1", kSecret);
  constexpr int kSize = 3;
  std::vector<float> results(kSize);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kSize; ++rank) {
    ranks.emplace_back([&, rank] {
      RendezvousClient client("127.0.0.1", server.port(), kSecret, 5s);
      RendezvousStore store(client, 5s);
      gloo::rendezvous::PrefixStore prefixed("test", store);
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, kSize);
      context->connectFullMesh(prefixed, device);
      float x = static_cast<float>(rank + 1);
      gloo::AllreduceHalvingDoubling<float>(context, {&x}, 1).run();
      results[rank] = x;
      // No rank may close its connections while another still finishes the reduction.
      gloo::BarrierOptions done(context);
      gloo::barrier(done);
    });
  }
  for (auto& t : ranks) t.join();
  CHECK(results == std::vector<float>(kSize, 6.0f));
}
