// Rank 0's fan-in at a few hundred ranks in one process over real loopback sockets: its control
// star and its heartbeat star keep their promises among many peers (a dead or frozen peer named,
// every message delivered whole and in order), and the star's file descriptors are reserved.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "base/deadline.h"
#include "base/fd_limit.h"
#include "cohort/errors.h"
#include "core/heartbeat.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

// A connected star of `size` ranks over loopback: element r is rank r's end.
std::vector<ControlChannel> star(int size, const std::string& label) {
  std::vector<ControlChannel> ends(size);
  ends[0] = ControlChannel::listen("127.0.0.1", size, "tok", label);
  std::vector<std::thread> workers;
  for (int r = 1; r < size; ++r) {
    workers.emplace_back([&, r] {
      ends[r] = ControlChannel::connect(r, size, ends[0].address(), "tok", 20s, label);
    });
  }
  ends[0].accept_workers(20s);
  for (auto& t : workers) t.join();
  return ends;
}

std::vector<std::byte> bytes(const std::string& s) {
  auto p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

std::unique_ptr<Heartbeat> heartbeat(ControlChannel channel, int rank, int size,
                                     std::chrono::microseconds timeout) {
  return std::make_unique<Heartbeat>(std::move(channel), rank, size, timeout,
                                     [](const std::string&) {});
}

using Clock = std::chrono::steady_clock;

}  // namespace

TEST_CASE("a frozen rank among 200 is named by rank 0 within its peer timeout") {
  constexpr int kSize = 200, kFrozen = 137;
  auto ends = star(kSize, "heartbeat");
  std::vector<std::unique_ptr<Heartbeat>> ranks(kSize);
  auto start = Clock::now();
  // Rank 137 keeps its connection open and says nothing; the 198 others beat.
  for (int r = 1; r < kSize; ++r) {
    if (r != kFrozen) ranks[r] = heartbeat(std::move(ends[r]), r, kSize, 1s);
  }
  ranks[0] = heartbeat(std::move(ends[0]), 0, kSize, 1s);
  auto verdict = ranks[0]->verdict(10s);
  auto took = Clock::now() - start;
  REQUIRE(verdict);
  CHECK_THAT(*verdict, Catch::Matchers::StartsWith("rank 137 has sent no heartbeat for 1."));
  CHECK(took >= 1s);
  CHECK(took < 2500ms);
  // Every other rank hears it from rank 0.
  for (int r : {1, 99, 199}) {
    CHECK(ranks[r]->verdict(5s) == "rank 0 aborted the job: " + *verdict);
  }
}

TEST_CASE("a rank that dies among 200 is named at once, long before the peer timeout") {
  constexpr int kSize = 200, kDead = 61;
  auto ends = star(kSize, "heartbeat");
  std::vector<std::unique_ptr<Heartbeat>> ranks(kSize);
  for (int r = 0; r < kSize; ++r) {
    if (r != kDead) ranks[r] = heartbeat(std::move(ends[r]), r, kSize, 30s);
  }
  auto start = Clock::now();
  ends[kDead] = ControlChannel();  // rank 61 dies: its connection closes
  auto verdict = ranks[0]->verdict(10s);
  REQUIRE(verdict);
  CHECK(Clock::now() - start < 2s);
  CHECK_THAT(*verdict, Catch::Matchers::Contains("heartbeat connection to rank 61 was closed"));
  CHECK(ranks[150]->verdict(5s) == "rank 0 aborted the job: " + *verdict);
}

TEST_CASE("rank 0's control star of 300 delivers every peer's messages whole and in order") {
  constexpr int kSize = 300;
  auto ends = star(kSize, "control");
  // Every peer sends three messages at once, a few of them larger than a read takes at a time.
  std::vector<std::byte> big(300 << 10, std::byte{5});
  for (int r = 1; r < kSize; ++r) {
    for (int m = 0; m < 3; ++m) ends[r].send(0, bytes(std::to_string(r) + "/" + std::to_string(m)));
    if (r % 50 == 0) ends[r].send(0, big);
  }
  std::vector<int> next(kSize, 0);
  int got = 0, bigs = 0;
  auto deadline = Clock::now() + 20s;
  while (got < 3 * (kSize - 1) + 5 && Clock::now() < deadline) {
    // A peer's big message leaves as the root reads; its writer is the peer's own channel.
    for (int r = 50; r < kSize; r += 50) ends[r].wait(0us);
    for (auto& m : ends[0].wait(100ms)) {
      ++got;
      if (m.payload.size() == big.size()) {
        CHECK(m.payload == big);
        CHECK(next[m.peer] == 3);
        ++bigs;
        continue;
      }
      CHECK(m.payload == bytes(std::to_string(m.peer) + "/" + std::to_string(next[m.peer]++)));
    }
  }
  CHECK(got == 3 * (kSize - 1) + 5);
  CHECK(bigs == 5);
  // One peer dies: the next wait names it.
  ends[233] = ControlChannel();
  CHECK_THROWS_WITH(ends[0].wait(5s),
                    Catch::Matchers::Contains("control connection to rank 233 was closed"));
}

TEST_CASE("rank 0 raises its soft descriptor limit to the hard one when a star needs more") {
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
  size_t open = open_descriptors();
  if (old.rlim_max != RLIM_INFINITY && old.rlim_max < open + 600) {
    WARN("the hard descriptor limit is too low to test raising the soft one");
    return;
  }
  rlimit low = old;
  low.rlim_cur = open + 50;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  {
    auto ends = star(300, "control");  // 299 connections at rank 0 alone
    rlimit now{};
    ::getrlimit(RLIMIT_NOFILE, &now);
    CHECK(now.rlim_cur == old.rlim_max);
  }
  ::setrlimit(RLIMIT_NOFILE, &old);
}

TEST_CASE("a hard descriptor limit too low for the star is an error naming it, before listening") {
  // The hard limit can only be lowered for good: in a child.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    rlimit low{};
    low.rlim_cur = low.rlim_max = open_descriptors() + 100;
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0) ::_exit(3);
    try {
      ControlChannel::listen("127.0.0.1", 4096, "tok", "heartbeat");
    } catch (const InvalidArgument& e) {
      std::string what = e.what();
      bool named =
          what.find(
              "rank 0's heartbeat connections to 4095 ranks need 4098 file "
              "descriptors") == 0 &&
          what.find("RLIMIT_NOFILE allows " + std::to_string(low.rlim_max)) != std::string::npos;
      ::_exit(named ? 0 : 2);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(1);  // no error
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
