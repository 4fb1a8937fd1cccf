// The heartbeat over real loopback sockets, every rank in this process: a silent rank stands for
// a frozen process (its socket stays open, nothing comes), a closed channel for a dead one.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <memory>
#include <thread>

#include "base/net.h"
#include "core/heartbeat.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

// A connected heartbeat star of `size` ranks: element r is rank r's end.
std::vector<ControlChannel> star(int size) {
  std::vector<ControlChannel> ends(size);
  ends[0] = ControlChannel::listen("127.0.0.1", size, "tok", "heartbeat");
  std::vector<std::thread> workers;
  for (int r = 1; r < size; ++r) {
    workers.emplace_back([&, r] {
      ends[r] = ControlChannel::connect(r, size, ends[0].address(), "tok", 5s, "heartbeat");
    });
  }
  ends[0].accept_workers(5s);
  for (auto& t : workers) t.join();
  return ends;
}

// A rank's heartbeat and what it reported through its failure callback.
struct Rank {
  std::mutex mutex;
  std::condition_variable reported_cv;
  std::vector<std::string> reported;
  std::unique_ptr<Heartbeat> heartbeat;

  void start(ControlChannel channel, int rank, int size, std::chrono::microseconds timeout) {
    heartbeat = std::make_unique<Heartbeat>(std::move(channel), rank, size, timeout,
                                            [this](const std::string& verdict) {
                                              std::lock_guard lock(mutex);
                                              reported.push_back(verdict);
                                              reported_cv.notify_all();
                                            });
  }
  // The verdict is recorded just before the callback runs: wait (bounded) for the callback.
  std::vector<std::string> reports(std::chrono::milliseconds wait = {}) {
    std::unique_lock lock(mutex);
    reported_cv.wait_for(lock, wait, [&] { return !reported.empty(); });
    return reported;
  }
};

using Clock = std::chrono::steady_clock;

}  // namespace

TEST_CASE("a silent rank is named by rank 0 once the peer timeout has passed") {
  auto ends = star(3);
  Rank zero, one;
  auto start = Clock::now();
  zero.start(std::move(ends[0]), 0, 3, 300ms);
  one.start(std::move(ends[1]), 1, 3, 300ms);
  // Rank 2 keeps its connection open and says nothing: frozen.
  auto verdict = zero.heartbeat->verdict(5s);
  auto took = Clock::now() - start;
  REQUIRE(verdict);
  CHECK_THAT(*verdict, Catch::Matchers::StartsWith("rank 2 has sent no heartbeat for 0.3"));
  CHECK(took >= 300ms);
  CHECK(took < 1300ms);
  CHECK(zero.reports(5s) == std::vector<std::string>{*verdict});
  // Rank 0 tells the others why.
  auto relayed = one.heartbeat->verdict(5s);
  REQUIRE(relayed);
  CHECK(*relayed == "rank 0 aborted the job: " + *verdict);
  CHECK(one.reports(5s) == std::vector<std::string>{*relayed});
}

TEST_CASE("a silent rank 0 is named by every other rank") {
  auto ends = star(2);
  Rank one;
  one.start(std::move(ends[1]), 1, 2, 300ms);
  auto verdict = one.heartbeat->verdict(5s);
  REQUIRE(verdict);
  CHECK_THAT(*verdict, Catch::Matchers::StartsWith("rank 0 has sent no heartbeat"));
  // Never heard since connecting: rank 0 may be healthy and waiting for a late rank.
  CHECK_THAT(*verdict, Catch::Matchers::Contains("still waiting for another rank's heartbeat"));
}

TEST_CASE("heartbeats keep an idle job alive well past the peer timeout") {
  auto ends = star(3);
  std::vector<Rank> ranks(3);
  for (int r = 0; r < 3; ++r) ranks[r].start(std::move(ends[r]), r, 3, 400ms);
  // What is under test is time: five peer timeouts without any other traffic.
  std::this_thread::sleep_for(2s);
  for (auto& rank : ranks) CHECK_FALSE(rank.heartbeat->verdict());
  // Goodbyes in any order are no failure either.
  ranks[1].heartbeat->stop();
  ranks[0].heartbeat->stop();
  ranks[2].heartbeat->stop();
  for (auto& rank : ranks) CHECK(rank.reports().empty());
}

TEST_CASE("a closed connection is named at once, long before the peer timeout") {
  auto ends = star(3);
  Rank zero, two;
  zero.start(std::move(ends[0]), 0, 3, 30s);
  two.start(std::move(ends[2]), 2, 3, 30s);
  auto start = Clock::now();
  ends[1] = ControlChannel();  // rank 1 dies
  auto verdict = zero.heartbeat->verdict(5s);
  REQUIRE(verdict);
  CHECK(Clock::now() - start < 1s);
  CHECK_THAT(*verdict, Catch::Matchers::Contains("heartbeat connection to rank 1 was closed"));
  auto relayed = two.heartbeat->verdict(5s);
  REQUIRE(relayed);
  CHECK(*relayed == "rank 0 aborted the job: " + *verdict);
}

TEST_CASE("a rank's own failure reaches every rank with its reason") {
  auto ends = star(3);
  std::vector<Rank> ranks(3);
  for (int r = 0; r < 3; ++r) ranks[r].start(std::move(ends[r]), r, 3, 30s);
  ranks[2].heartbeat->fail("Gloo allreduce failed");
  CHECK(ranks[2].heartbeat->verdict() == "Gloo allreduce failed");
  auto at_zero = ranks[0].heartbeat->verdict(5s);
  auto at_one = ranks[1].heartbeat->verdict(5s);
  CHECK(at_zero == "rank 2 left the job: Gloo allreduce failed");
  CHECK(at_one == "rank 0 aborted the job: rank 2 left the job: Gloo allreduce failed");
  // The rank that failed by itself is not told about its own failure.
  CHECK(ranks[2].reports().empty());
}

TEST_CASE("rank 0's own failure reaches every rank") {
  auto ends = star(3);
  std::vector<Rank> ranks(3);
  for (int r = 0; r < 3; ++r) ranks[r].start(std::move(ends[r]), r, 3, 30s);
  ranks[0].heartbeat->fail("out of memory");
  for (int r = 1; r < 3; ++r) {
    CHECK(ranks[r].heartbeat->verdict(5s) == "rank 0 aborted the job: out of memory");
  }
  CHECK(ranks[0].reports().empty());
}

TEST_CASE("an idle connection to rank 0's heartbeat listener while the job starts fails nothing") {
  ControlChannel root = ControlChannel::listen("127.0.0.1", 3, "tok", "heartbeat");
  // A stranger connects first and says nothing; it is accepted before the real ranks.
  auto colon = root.address().rfind(':');
  sockaddr_in to = net::resolve_ipv4(root.address().substr(0, colon),
                                     std::stoi(root.address().substr(colon + 1)));
  Fd idle(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(::connect(idle.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  // As in a real job, each rank starts watching rank 0 as soon as its own connection is open.
  std::vector<Rank> ranks(3);
  std::vector<std::thread> workers;
  for (int r = 1; r < 3; ++r) {
    workers.emplace_back([&, r] {
      ranks[r].start(ControlChannel::connect(r, 3, root.address(), "tok", 5s, "heartbeat"), r, 3,
                     400ms);
    });
  }
  auto start = Clock::now();
  root.accept_workers(5s);
  CHECK(Clock::now() - start < 400ms);
  for (auto& t : workers) t.join();
  ranks[0].start(std::move(root), 0, 3, 400ms);
  // What is under test is time: several peer timeouts with a healthy rank 0.
  std::this_thread::sleep_for(1500ms);
  for (auto& rank : ranks) CHECK_FALSE(rank.heartbeat->verdict());
  for (auto& rank : ranks) rank.heartbeat->stop();
  for (auto& rank : ranks) CHECK(rank.reports().empty());
}
