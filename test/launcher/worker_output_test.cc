// WorkerOutput's files (--output-filename) and rank lists (--console-ranks), on a real directory.
// The console side is checked end to end in cohortrun_test.sh.
#include "launcher/worker_output.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cohort/errors.h"

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
  std::string where = (dir.path / "file" / "logs").string();
  CHECK_THROWS_WITH(
      WorkerOutput({.directory = where}),
      Catch::StartsWith("--output-filename: cannot create directory '" + where + "'"));
}

TEST_CASE("worker output: --console-ranks lists") {
  CHECK(parse_rank_list("0") == std::set<int>{0});
  CHECK(parse_rank_list("0,2-4,3") == std::set<int>{0, 2, 3, 4});
  for (const char* bad : {"", ",", "1,", "a", "-1", "3-1", "1-", "0-99999999", " 1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_rank_list(bad), InvalidArgument);
  }
}
