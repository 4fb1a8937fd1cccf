// WorkerOutput's files (--output-filename) and rank lists (--console-ranks), on a real directory.
// The console side is checked end to end in cohortrun_test.sh.
#include "launcher/worker_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cohort/errors.h"
#include "test/common/captured_stderr.h"

using namespace cohort;
using namespace cohort::discovery;

namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("cohort-output-" + std::to_string(::getpid()));
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("worker output: one file per rank, and per round in an elastic job") {
  TempDir dir;
  // The console must stay quiet: no rank is selected for it.
  WorkerOutput output(
      {.directory = (dir.path / "logs").string(), .console = std::set<int>{}, .rank_digits = 2});
  output.write({"3", 3, {}}, false, "a\nb\n");
  output.write({"3", 3, {}}, true, "oops\n");
  output.write({"1", 1, 2}, false, "round two\n");
  output.write({"w4", {}, {}}, false, "early\n");
  output.write({"3", 3, {}}, false, "c\n");
  CHECK(slurp(dir.path / "logs/rank.03/stdout") == "a\nb\nc\n");
  CHECK(slurp(dir.path / "logs/rank.03/stderr") == "oops\n");
  CHECK(slurp(dir.path / "logs/round.2/rank.1/stdout") == "round two\n");
  CHECK(slurp(dir.path / "logs/worker.w4/stdout") == "early\n");
}

TEST_CASE("worker output: --prefix-timestamp puts the UTC time before every line in the files") {
  TempDir dir;
  WorkerOutput output(
      {.directory = dir.path.string(), .timestamps = true, .console = std::set<int>{}});
  output.write({"0", 0, {}}, false, "x\ny\n");
  std::string stamp = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z )";
  CHECK(std::regex_match(slurp(dir.path / "rank.0/stdout"),
                         std::regex(stamp + "x\n" + stamp + "y\n")));
}

TEST_CASE("worker output: a directory that cannot be made is refused, naming it") {
  TempDir dir;
  std::filesystem::create_directories(dir.path);
  std::ofstream(dir.path / "file") << "in the way";
  std::string above = (dir.path / "file").string();
  std::string where = above + "/logs";
  CHECK_THROWS_WITH(WorkerOutput({.directory = where}),
                    Catch::StartsWith("--output-filename: cannot create directory '" + above +
                                      "' (above '" + where + "'): "));
}

TEST_CASE("worker output: a directory that is a link a FIFO a file or a device is refused") {
  TempDir dir;
  std::filesystem::create_directories(dir.path / "real");
  std::filesystem::create_directory_symlink(dir.path / "real", dir.path / "link");
  std::filesystem::create_symlink(dir.path / "absent", dir.path / "dangling");
  REQUIRE(::mkfifo((dir.path / "fifo").c_str(), 0600) == 0);
  std::ofstream(dir.path / "file") << "x";
  auto refused = [&](const std::string& where, const std::string& what) {
    CAPTURE(where);
    CHECK_THROWS_AS(WorkerOutput({.directory = where}), InvalidArgument);
    CHECK_THROWS_WITH(WorkerOutput({.directory = where}),
                      Catch::StartsWith("--output-filename: '" + where + "' is " + what));
  };
  refused((dir.path / "link").string(), "a symbolic link; Cohort writes into a directory only");
  refused((dir.path / "dangling").string(), "a symbolic link;");
  refused((dir.path / "fifo").string(), "a FIFO, not a directory");
  refused((dir.path / "file").string(), "a regular file, not a directory");
  refused("/dev/null", "a character device, not a directory");
  CHECK(std::filesystem::is_empty(dir.path / "real"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "absent"));
}

TEST_CASE("worker output: a link planted at a rank's directory or file is never written through") {
  TempDir dir;
  auto logs = dir.path / "logs";
  std::filesystem::create_directories(logs);
  std::filesystem::create_directories(dir.path / "victim");
  std::ofstream(dir.path / "victim" / "precious") << "kept\n";
  // Whoever can write to DIR plants rank.0 (a directory cohortrun makes) as a link elsewhere,
  // and rank.1's stdout as a link to a file.
  std::filesystem::create_directory_symlink(dir.path / "victim", logs / "rank.0");
  std::filesystem::create_directories(logs / "rank.1");
  std::filesystem::create_symlink(dir.path / "victim" / "precious", logs / "rank.1" / "stdout");
  REQUIRE(::mkfifo((logs / "rank.1" / "stderr").c_str(), 0600) == 0);
  cohort::testing::CapturedStderr err;
  WorkerOutput output({.directory = logs.string(), .console = std::set<int>{}});
  output.write({"0", 0, {}}, false, "rank 0\n");
  output.write({"1", 1, {}}, false, "rank 1\n");
  output.write({"1", 1, {}}, true, "rank 1 err\n");  // a FIFO: refused at once, never a hang
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path / "victim"),
                      std::filesystem::directory_iterator()) == 1);
  CHECK(slurp(dir.path / "victim" / "precious") == "kept\n");
  CHECK_THAT(err.text(), Catch::Contains("--output-filename: '" + (logs / "rank.0").string() +
                                         "' is a symbolic link"));
}

TEST_CASE("worker output: --console-ranks lists") {
  CHECK(parse_rank_list("0") == std::set<int>{0});
  CHECK(parse_rank_list("0,2-4,3") == std::set<int>{0, 2, 3, 4});
  for (const char* bad : {"", ",", "1,", "a", "-1", "3-1", "1-", "0-99999999", " 1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_rank_list(bad), InvalidArgument);
  }
}
