// A worker's request to the launcher survives a connection that breaks on the way (a busy or
// restarting server): the client sends it again within its deadline instead of failing the
// check-in, which used to retire the worker's slot for good. And a cancellation ends a waiting
// request at once.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/cancellation.h"
#include "cohort/errors.h"
#include "rendezvous/client.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/server.h"

using namespace cohort;
using namespace cohort::rendezvous;
using namespace std::chrono_literals;

namespace {

const std::string kSecret(32, 'r');

// Copies bytes both ways between `a` and `b` until either side closes.
void splice(int a, int b) {
  char buffer[4096];
  for (;;) {
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    if (::poll(fds, 2, 10'000) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) return;
      if (::write(fds[1 - i].fd, buffer, n) != n) return;
    }
  }
}

// A flaky way to the server: the first `drops` connections are cut as soon as the client has
// sent something; later ones are passed through to `server_port`.
class FlakyProxy {
 public:
  FlakyProxy(int server_port, int drops) : listener_(net::listen_tcp("127.0.0.1", port_)) {
    thread_ = std::thread([this, server_port, drops] {
      for (int i = 0;; ++i) {
        Fd client(::accept(listener_.get(), nullptr, nullptr));
        if (!client.valid()) return;
        if (i < drops) {
          pollfd in{client.get(), POLLIN, 0};
          ::poll(&in, 1, 10'000);
          continue;  // closed without an answer
        }
        Fd server = net::connect_tcp("127.0.0.1", server_port, Clock::now() + 10s);
        splice(client.get(), server.get());
      }
    });
  }
  ~FlakyProxy() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  int port_ = 0;
  Fd listener_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a request whose connection breaks before the answer is sent again") {
  RendezvousServer server("127.0.0.1", kSecret);
  FlakyProxy proxy(server.port(), 2);
  RendezvousClient client("127.0.0.1", proxy.port(), kSecret, 10s, "elastic");
  client.set("checkin/3/0", "start");
  CHECK(server.lookup("checkin/3/0", "elastic") == "start");
}

TEST_CASE("a request that keeps failing gives up at its deadline naming the attempts") {
  RendezvousServer server("127.0.0.1", kSecret);
  FlakyProxy proxy(server.port(), 1'000'000);
  RendezvousClient client("127.0.0.1", proxy.port(), kSecret, 300ms);
  CHECK_THROWS_WITH(client.set("k", "v"), Catch::Matchers::Contains("attempts)"));
}

TEST_CASE("a cancellation ends a waiting request at once with its reason") {
  RendezvousServer server("127.0.0.1", kSecret);
  RendezvousClient client("127.0.0.1", server.port(), kSecret, 10s);
  Cancellation cancel;
  std::thread canceller([&] {
    REQUIRE(server.await_waiting_gets(1, 10s));
    cancel.cancel("round 4 was abandoned");
  });
  auto start = Clock::now();
  CHECK_THROWS_AS(client.get("never", 20s, &cancel), InternalError);
  CHECK(Clock::now() - start < 5s);
  canceller.join();
  CHECK_THROWS_WITH(client.get("never", 20s, &cancel), "round 4 was abandoned");
}
