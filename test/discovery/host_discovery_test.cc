// Host discovery: parsing the script's output, and running real scripts that succeed, change,
// fail, hang, print garbage or print too much.
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cohort/errors.h"
#include "discovery/host_discovery.h"

using namespace cohort::discovery;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

// A directory for the test's scripts, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "discovery_test.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  // Writes an executable /bin/sh script; `@` in the body stands for this directory.
  std::string script(const std::string& name, const std::string& body) const {
    std::string text = body;
    for (size_t at; (at = text.find('@')) != std::string::npos;) text.replace(at, 1, path_);
    std::ofstream(path(name)) << "#!/bin/sh\n" << text;
    chmod(path(name).c_str(), 0755);
    return path(name);
  }

 private:
  std::filesystem::path path_;
};

// Orphans of the scripts (their background children) are handed to this process while it
// lives, so the test can tell for certain that they died.
class Subreaper {
 public:
  Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
};

// Waits (bounded) for a process handed to us to end, reaps it, and says whether it is gone.
bool ends_within(pid_t pid, int millis) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  bool ended = ::poll(&p, 1, millis) == 1;
  ::close(fd);
  if (ended) ::waitpid(pid, nullptr, WNOHANG);
  return ended && ::kill(pid, 0) == -1 && errno == ESRCH;
}

std::vector<pid_t> read_pids(const std::string& path) {
  std::ifstream in(path);
  std::vector<pid_t> pids;
  for (pid_t pid; in >> pid;) pids.push_back(pid);
  return pids;
}

HostDiscoveryOptions options_for(const std::string& script) {
  HostDiscoveryOptions o;
  o.command = {script};
  o.limits.timeout = 5s;
  return o;
}

}  // namespace

TEST_CASE("discovered hosts parse with slots defaults comments and blank lines") {
  auto hosts = parse_discovered_hosts("  a:2 \n\n# all of them\nb\r\nc : 4  # big\n", 3);
  CHECK(hosts == std::vector<HostSlots>{{"a", 2}, {"b", 3}, {"c", 4}});
  CHECK(parse_discovered_hosts("", 1).empty());
  CHECK(parse_discovered_hosts("# none right now\n\n", 1).empty());
  CHECK(parse_discovered_hosts("node-1.example_x:4096", 1) ==
        std::vector<HostSlots>{{"node-1.example_x", 4096}});
}

TEST_CASE("a discovered host marked ':drain' keeps its slots and is draining") {
  auto hosts = parse_discovered_hosts("a:2:drain\nb:drain\nc : 3 : drain # going\ndrain:1\n", 5);
  CHECK(hosts == std::vector<HostSlots>{
                     {"a", 2, true}, {"b", 5, true}, {"c", 3, true}, {"drain", 1, false}});
  CHECK_THROWS_WITH(parse_discovered_hosts("a:2:drained", 1), Contains("slot count '2:drained'"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:drain:2", 1), Contains("slot count 'drain:2'"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:2:drain:drain", 1), Contains("slot count '2:drain'"));
  CHECK_THROWS_WITH(parse_discovered_hosts(":drain", 1), Contains("not a valid host name"));
}

TEST_CASE("bad discovery lines are refused with their line number") {
  CHECK_THROWS_WITH(parse_discovered_hosts("a:2\nb:0\n", 1), Contains("line 2") && Contains("'0'"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:x", 1), Contains("line 1: slot count 'x'"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:4097", 1), Contains("between 1 and 4096"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:", 1), Contains("slot count ''"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a:2:3", 1), Contains("slot count '2:3'"));
  CHECK_THROWS_WITH(parse_discovered_hosts("\n\nnot a host\n", 1),
                    Contains("line 3: 'not a host' is not a valid host name"));
  CHECK_THROWS_WITH(parse_discovered_hosts("-oProxyCommand:1", 1),
                    Contains("not a valid host name"));
  CHECK_THROWS_WITH(parse_discovered_hosts("[::1]:2", 1), Contains("IPv6"));
  CHECK_THROWS_WITH(parse_discovered_hosts(std::string("a\x01\xff:1"), 1),
                    Contains("'a\\x01\\xff'"));
  CHECK_THROWS_WITH(parse_discovered_hosts(std::string(5000, 'x'), 1), Contains("bytes left out"));
  CHECK_THROWS_WITH(parse_discovered_hosts("a\nb:2\na:2\n", 1),
                    Contains("line 3: host 'a' is listed twice (first on line 1)"));
}

TEST_CASE("a discovery script that succeeds reports changed and then unchanged") {
  TempDir dir;
  auto o = options_for(dir.script("hosts.sh", "echo localhost:2\necho 127.0.0.1\n"));
  o.default_slots = 3;
  HostDiscovery discovery(o);
  CHECK_FALSE(discovery.has_succeeded());
  CHECK(discovery.run_now().status == DiscoveryStatus::kChanged);
  CHECK(discovery.hosts() == std::vector<HostSlots>{{"localhost", 2}, {"127.0.0.1", 3}});
  CHECK(discovery.run_now().status == DiscoveryStatus::kUnchanged);
  CHECK(discovery.has_succeeded());
  CHECK(discovery.consecutive_failures() == 0);
}

TEST_CASE("a discovery script whose output changes between runs is followed") {
  TempDir dir;
  // The count of earlier runs is kept in a file: run 0 sees a, runs 1+ also b, run 2+ a has 4.
  auto script = dir.script("hosts.sh",
                           "n=$(cat @/count 2>/dev/null || echo 0)\n"
                           "echo $((n + 1)) > @/count\n"
                           "if [ $n -ge 2 ]; then echo a:4; else echo a:2; fi\n"
                           "if [ $n -ge 1 ]; then echo b; fi\n");
  HostDiscovery discovery(options_for(script));
  CHECK(discovery.run_now().status == DiscoveryStatus::kChanged);
  CHECK(discovery.hosts() == std::vector<HostSlots>{{"a", 2}});
  CHECK(discovery.run_now().status == DiscoveryStatus::kChanged);
  CHECK(discovery.hosts() == std::vector<HostSlots>{{"a", 2}, {"b", 1}});
  CHECK(discovery.run_now().status == DiscoveryStatus::kChanged);
  CHECK(discovery.hosts() == std::vector<HostSlots>{{"a", 4}, {"b", 1}});
  CHECK(discovery.run_now().status == DiscoveryStatus::kUnchanged);
}

TEST_CASE("a failing discovery script keeps the last good set and shows its output") {
  TempDir dir;
  auto script = dir.script("hosts.sh",
                           "if [ -e @/fail ]; then echo half:2; echo boom >&2; exit 3; fi\n"
                           "echo good:2\n");
  HostDiscovery discovery(options_for(script));
  REQUIRE(discovery.run_now().status == DiscoveryStatus::kChanged);
  std::ofstream(dir.path("fail")) << "";
  auto result = discovery.run_now();
  CHECK(result.status == DiscoveryStatus::kFailed);
  CHECK_THAT(result.error, Contains("exited with status 3") && Contains("stdout: half:2") &&
                               Contains("stderr: boom") && Contains("keeping the last good set"));
  CHECK(discovery.hosts() == std::vector<HostSlots>{{"good", 2}});
  CHECK(discovery.consecutive_failures() == 1);
  std::filesystem::remove(dir.path("fail"));
  CHECK(discovery.run_now().status == DiscoveryStatus::kUnchanged);
  CHECK(discovery.consecutive_failures() == 0);
}

TEST_CASE("a discovery script printing garbage or a duplicate host fails the run") {
  TempDir dir;
  auto garbage = dir.script("garbage.sh", "echo ok:1\necho 'Traceback (most recent call)'\n");
  auto result = HostDiscovery(options_for(garbage)).run_now();
  CHECK(result.status == DiscoveryStatus::kFailed);
  CHECK_THAT(result.error, Contains("printed an unusable host list: line 2") &&
                               Contains("no host set known yet") && Contains("Traceback"));
  auto twice = dir.script("twice.sh", "echo a:1\necho b:1\necho a:2\n");
  HostDiscovery discovery(options_for(twice));
  result = discovery.run_now();
  CHECK(result.status == DiscoveryStatus::kFailed);
  CHECK_THAT(result.error, Contains("host 'a' is listed twice (first on line 1)"));
  CHECK(discovery.hosts().empty());
}

TEST_CASE("a hanging discovery script is killed with its process group at the timeout") {
  Subreaper subreaper;
  TempDir dir;
  auto script = dir.script("hang.sh",
                           "echo $$ > @/pids\n"
                           "sleep 60 &\n"
                           "echo $! >> @/pids\n"
                           "echo ready:1\n"
                           "sleep 60\n");
  auto o = options_for(script);
  o.limits.timeout = 1500ms;
  HostDiscovery discovery(o);
  auto start = std::chrono::steady_clock::now();
  auto result = discovery.run_now();
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(result.status == DiscoveryStatus::kFailed);
  CHECK_THAT(result.error,
             Contains("did not finish within its 1500 ms timeout") && Contains("ready:1"));
  CHECK(took >= 1500ms);
  CHECK(took < 6s);
  auto pids = read_pids(dir.path("pids"));
  REQUIRE(pids.size() == 2);
  errno = 0;
  CHECK(::kill(pids[0], 0) == -1);  // the script itself: killed and reaped
  CHECK(errno == ESRCH);
  CHECK(ends_within(pids[1], 5000));  // its background child, in the same group
}

TEST_CASE("processes a discovery script leaves behind are killed when it exits") {
  Subreaper subreaper;
  TempDir dir;
  // The background sleep keeps stdout open: without the group kill the run would last 60 s.
  auto script = dir.script("leave.sh", "sleep 60 &\necho $! > @/pids\necho a:1\n");
  auto result = run_script({script}, {.timeout = 10s});
  CHECK(result.ok());
  CHECK(result.elapsed < 5s);
  CHECK(result.out == "a:1\n");
  auto pids = read_pids(dir.path("pids"));
  REQUIRE(pids.size() == 1);
  CHECK(ends_within(pids[0], 5000));
}

TEST_CASE("huge discovery output is bounded") {
  TempDir dir;
  SECTION("stdout past the limit fails the run and kills the script") {
    auto script = dir.script("flood.sh", "while :; do echo localhost:1; done\n");
    auto result = run_script({script}, {.timeout = 10s});
    CHECK(result.stdout_overflow);
    CHECK(result.out.size() == ScriptLimits{}.max_stdout);
    CHECK(result.elapsed < 10s);
    auto failed = HostDiscovery(options_for(script)).run_now();
    CHECK(failed.status == DiscoveryStatus::kFailed);
    CHECK_THAT(failed.error, Contains("printed too much on stdout") && Contains("left out"));
    CHECK(failed.error.size() < 10000);
  }
  SECTION("stderr past the limit is dropped and the run still counts") {
    auto script = dir.script("noisy.sh", "head -c 3000000 /dev/zero >&2\necho a:1\n");
    auto result = run_script({script}, {.timeout = 10s});
    CHECK(result.ok());
    CHECK(result.err.size() == ScriptLimits{}.max_stderr);
    CHECK(result.err_dropped == 3000000 - ScriptLimits{}.max_stderr);
    CHECK(HostDiscovery(options_for(script)).run_now().status == DiscoveryStatus::kChanged);
  }
  SECTION("a failure report shows a short escaped excerpt") {
    auto script = dir.script("binary.sh", "head -c 3000000 /dev/zero >&2\nexit 1\n");
    auto failed = HostDiscovery(options_for(script)).run_now();
    CHECK(failed.status == DiscoveryStatus::kFailed);
    CHECK_THAT(failed.error, Contains("\\x00") && Contains("more stderr bytes dropped"));
    CHECK(failed.error.size() < 10000);
  }
}

TEST_CASE("a discovery script that cannot run is refused or fails the run") {
  TempDir dir;
  CHECK_THROWS_WITH(HostDiscovery(options_for(dir.path("missing.sh"))),
                    Contains("cannot be run: No such file"));
  std::ofstream(dir.path("plain.txt")) << "echo a\n";
  CHECK_THROWS_AS(HostDiscovery(options_for(dir.path("plain.txt"))), cohort::InvalidArgument);
  CHECK_THROWS_WITH(HostDiscovery(options_for(dir.path(""))), Contains("not a regular file"));
  auto script = dir.script("gone.sh", "echo a:1\n");
  HostDiscovery discovery(options_for(script));
  std::filesystem::remove(script);
  auto result = discovery.run_now();
  CHECK(result.status == DiscoveryStatus::kFailed);
  CHECK_THAT(result.error, Contains("could not be started"));
  auto o = options_for(dir.script("ok.sh", "echo a:1\n"));
  o.default_slots = 0;
  CHECK_THROWS_WITH(HostDiscovery(o), Contains("--slots-per-host"));
}

TEST_CASE("discovery runs when due and an event loop can wait for it") {
  TempDir dir;
  TimePoint now{};
  auto o = options_for(dir.script("hosts.sh", "echo a:1\n"));
  o.interval = 1000ms;
  HostDiscovery discovery(o, [&] { return now; });
  CHECK(discovery.time_until_due() == 0ms);
  std::optional<DiscoveryResult> result;
  for (int i = 0; i < 1000 && !result; ++i) {  // an event loop, bounded for the test
    result = discovery.advance();
    if (result) break;
    auto fds = discovery.poll_fds();
    REQUIRE_FALSE(fds.empty());
    ::poll(fds.data(), fds.size(), discovery.poll_timeout());
  }
  REQUIRE(result);
  CHECK(result->status == DiscoveryStatus::kChanged);
  CHECK_FALSE(discovery.running());
  CHECK(discovery.time_until_due() == 1000ms);
  CHECK(discovery.poll_timeout() == 1000);
  now += 999ms;
  CHECK_FALSE(discovery.advance());
  CHECK_FALSE(discovery.running());
  CHECK(discovery.time_until_due() == 1ms);
  now += 1ms;
  auto next = discovery.advance();
  CHECK((discovery.running() || next.has_value()));
}

TEST_CASE("a script that exits but leaves its output open elsewhere fails at the timeout") {
  TempDir dir;
  if (::access("/usr/bin/setsid", X_OK) != 0) {
    WARN("no /usr/bin/setsid: not tested");
    return;
  }
  // setsid moves the sleep out of the script's process group, still holding its stdout.
  auto script = dir.script("escape.sh",
                           "setsid sh -c 'echo $$ > @/pids; exec sleep 60' &\n"
                           "while [ ! -s @/pids ]; do sleep 0.05; done\n"
                           "echo a:1\n");
  auto result = run_script({script}, {.timeout = 1500ms});
  auto pids = read_pids(dir.path("pids"));
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  CHECK(result.output_left_open);
  CHECK_THAT(result.problem(), Contains("stdout stayed open"));
  CHECK(result.elapsed < 6s);
}
