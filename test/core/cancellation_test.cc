// Cancellation (base/cancellation.h) and the fault points that the recovery tests rely on
// (core/fault_injection.h).
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <thread>

#include "base/cancellation.h"
#include "cohort/errors.h"
#include "core/config.h"
#include "core/fault_injection.h"

using namespace cohort;

TEST_CASE("a cancellation wakes a poll on its fd and keeps its first reason") {
  Cancellation cancel;
  pollfd fd{cancel.fd(), POLLIN, 0};
  CHECK(::poll(&fd, 1, 0) == 0);
  CHECK_NOTHROW(cancel.throw_if_cancelled());
  std::thread other([&] { cancel.cancel("member 2 died"); });
  CHECK(::poll(&fd, 1, 10'000) == 1);
  other.join();
  cancel.cancel("a later reason");
  CHECK(cancel.reason() == "member 2 died");
  CHECK(::poll(&fd, 1, 0) == 1);  // stays readable for every later wait
  CHECK_THROWS_AS(cancel.throw_if_cancelled(), InternalError);
}

TEST_CASE("a cancellation runs its hooks once, and at once when added late") {
  Cancellation cancel;
  std::vector<std::string> ran;
  {
    CancelHook removed(&cancel, [&](const std::string&) { ran.push_back("removed"); });
  }
  CancelHook kept(&cancel, [&](const std::string& why) { ran.push_back("kept: " + why); });
  cancel.cancel("abandoned");
  cancel.cancel("again");
  CancelHook late(&cancel, [&](const std::string& why) { ran.push_back("late: " + why); });
  CHECK(ran == std::vector<std::string>{"kept: abandoned", "late: abandoned"});
  CancelHook none(nullptr, [&](const std::string&) { ran.push_back("never"); });
  CHECK(ran.size() == 2);
}

TEST_CASE("COHORT_FAULT_KILL_AT is parsed and refused naming the variable") {
  auto from = [](std::optional<std::string> value) {
    return Config::from([value](const char* name) -> std::optional<std::string> {
      if (std::string(name) == "COHORT_FAULT_KILL_AT") return value;
      return std::nullopt;
    });
  };
  auto point = from("gloo-pairs:1:0").fault_kill_at;
  REQUIRE(point);
  CHECK(point->phase == "gloo-pairs");
  CHECK(point->entry == 1);
  CHECK(point->worker_id == "0");
  CHECK_FALSE(from(std::nullopt).fault_kill_at);
  for (const char* bad : {"gloo:1:0", "sync:-1:0", "sync:x:0", "sync:1:", "sync:1", "",
                          "promote#0:1:0", "promote#:1:0", "promote#x:1:0", "gloo#2:1:0"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(from(bad), Catch::Matchers::Contains("COHORT_FAULT_KILL_AT"));
  }
}

TEST_CASE("a fault point kills exactly the worker, phase and entry it names") {
  auto point = parse_fault_point("control:2:7");
  CHECK_NOTHROW(maybe_inject_fault(point, "7", "control", 1));
  CHECK_NOTHROW(maybe_inject_fault(point, "6", "control", 2));
  CHECK_NOTHROW(maybe_inject_fault(point, "7", "heartbeat", 2));
  CHECK_NOTHROW(maybe_inject_fault(std::nullopt, "7", "control", 2));
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    maybe_inject_fault(point, "7", "control", 2);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
}

TEST_CASE("a fault point with #N waits for the N-th time its phase is reached") {
  auto point = parse_fault_point("promote#3:0:7");
  REQUIRE(point.phase == "promote");
  CHECK(point.occurrence == 3);
  CHECK(parse_fault_point("promote:0:7").occurrence == 1);
  CHECK_NOTHROW(maybe_inject_fault(point, "7", "promote", 0, 1));
  CHECK_NOTHROW(maybe_inject_fault(point, "7", "promote", 0, 2));
  CHECK_NOTHROW(maybe_inject_fault(point, "7", "promote", 0, 4));
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    maybe_inject_fault(point, "7", "promote", 0, 3);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
}
