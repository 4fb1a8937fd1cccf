// Rate-limited log lines: what a peer can cause at will must not flood stderr.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "test/common/captured_stderr.h"

using namespace cohort;
using namespace std::chrono_literals;

namespace {

// Runs `body` with stderr sent to a file; returns the lines it wrote.
template <typename F>
std::vector<std::string> stderr_lines(F&& body) {
  cohort::testing::CapturedStderr captured;
  body();
  return captured.lines();
}

}  // namespace

TEST_CASE("a repeated line is written once per window and then carries its count") {
  log::set_repeat_window(300ms);
  auto lines = stderr_lines([] {
    for (int i = 0; i < 1000; ++i) log::limited(log::Level::kWarning, "k", "refusing peer ", i);
    log::limited(log::Level::kWarning, "other", "another kind");  // its own key, its own window
    // What is under test is time: the window must pass.
    std::this_thread::sleep_for(350ms);
    log::limited(log::Level::kWarning, "k", "refusing peer ", 1000);
    log::limited(log::Level::kWarning, "k", "refusing peer ", 1001);
  });
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::Matchers::EndsWith("WARNING: refusing peer 0\n"));
  CHECK_THAT(lines[1], Catch::Matchers::EndsWith("another kind\n"));
  CHECK_THAT(lines[2], Catch::Matchers::Contains(
                           "refusing peer 1000 (repeated 999 more times in the last 0."));
}

TEST_CASE("lines below the log level are neither written nor counted") {
  log::set_repeat_window(1h);
  auto lines = stderr_lines([] {
    log::limited(log::Level::kDebug, "quiet", "not shown");
    log::limited(log::Level::kWarning, "quiet", "shown");
  });
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Matchers::EndsWith("shown\n"));
}

TEST_CASE("a burst writes that many lines per window, whatever keys they name, then a count") {
  log::set_repeat_window(300ms);
  auto lines = stderr_lines([] {
    for (int i = 0; i < 5000; ++i) {
      log::limited_burst(log::Level::kWarning, "class", 4, "refused key junk/", i);
    }
    std::this_thread::sleep_for(350ms);
    log::limited_burst(log::Level::kWarning, "class", 4, "refused key junk/", 5000);
  });
  REQUIRE(lines.size() == 5);
  CHECK_THAT(lines[3], Catch::Matchers::EndsWith("refused key junk/3\n"));
  CHECK_THAT(lines[4], Catch::Matchers::Contains(
                           "refused key junk/5000 (repeated 4996 more times in the last 0."));
}
