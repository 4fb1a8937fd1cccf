// A writer killed (SIGKILL) after every single step of a save, one run per step: each time, a
// fresh load must find a good checkpoint: the previous one if the kill came before the rename,
// the new one after it. Never a damaged one, never none.
#include <catch2/catch.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <sstream>

#include "checkpoint_values.h"
#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"

extern char** environ;

namespace fs = std::filesystem;

namespace {

// Runs the writer; returns its wait status and, if asked, its stdout.
int run_writer(const fs::path& dir, int generation, int kill_at, std::string* out = nullptr) {
  std::string d = dir.string(), g = std::to_string(generation), k = std::to_string(kill_at);
  char* argv[] = {const_cast<char*>(COHORT_CRASH_WRITER), d.data(), g.data(), k.data(), nullptr};
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, COHORT_CRASH_WRITER, &actions, nullptr, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (out) *out = text;
  return status;
}

std::vector<int> stages_of(const std::string& text) {
  std::vector<int> stages;
  std::istringstream in(text);
  std::string word;
  int step, stage;
  unsigned long long bytes;
  while (in >> word >> step >> stage >> bytes) stages.push_back(stage);
  return stages;
}

}  // namespace

TEST_CASE(
    "a save killed at any step leaves a loadable checkpoint: the previous one until the rename") {
  cohort::init();
  fs::path base = fs::temp_directory_path() / ("cohort-crash-test-" + std::to_string(getpid()));
  fs::remove_all(base);
  struct RemoveAtEnd {
    fs::path path;
    ~RemoveAtEnd() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{base};

  // A complete run tells the steps of a generation-2 save after a generation-1 save.
  std::string trace;
  REQUIRE(run_writer(base / "trace", 1, 0) == 0);
  REQUIRE(run_writer(base / "trace", 2, 0, &trace) == 0);
  std::vector<int> stages = stages_of(trace);
  REQUIRE(stages.size() >= 12);
  REQUIRE(stages.back() == static_cast<int>(cohort::elastic::SaveStage::kPruned));
  int renamed_at = static_cast<int>(cohort::elastic::SaveStage::kRenamed);
  // Kill points on both sides of the rename: every write of the contents, the header, the fsync;
  // then the rename, the directory fsync and the pruning.
  CHECK(std::count_if(stages.begin(), stages.end(), [&](int s) { return s < renamed_at; }) >= 10);
  CHECK(std::count_if(stages.begin(), stages.end(), [&](int s) { return s >= renamed_at; }) == 3);

  for (size_t kill_at = 1; kill_at <= stages.size(); ++kill_at) {
    INFO("killed after step " << kill_at << " (stage " << stages[kill_at - 1] << ")");
    fs::path dir = base / std::to_string(kill_at);
    REQUIRE(run_writer(dir, 1, 0) == 0);
    int status = run_writer(dir, 2, static_cast<int>(kill_at));
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
    bool renamed = stages[kill_at - 1] >= renamed_at;
    test::Values loaded(0, (6 << 20) / sizeof(float) + 12345);
    auto got = cohort::elastic::load_latest(loaded.state, dir);
    REQUIRE(got);
    CHECK(got->sequence == (renamed ? 2u : 1u));
    CHECK(loaded.generation_matches(renamed ? 2 : 1));
    // The next save after the crash succeeds and cleans up what the crash left.
    loaded.commit_generation(3);
    CHECK(cohort::elastic::save(loaded.state, dir).sequence == (renamed ? 3u : 2u));
    for (const auto& e : fs::directory_iterator(dir)) {
      CHECK(e.path().filename().string().rfind(".ckpt-", 0) != 0);
    }
  }
}
