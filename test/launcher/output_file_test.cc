// cohortrun's output files (launcher/output_file.h): never opened through a symbolic link,
// never blocking on a FIFO, only regular files; the atomic rewrite never follows a planted link.
#include "launcher/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cohort/errors.h"

using cohort::Error;
using namespace cohort::discovery;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = (fs::temp_directory_path() / "output_file_test.XXXXXX").string();
    REQUIRE(::mkdtemp(name.data()) != nullptr);
    path = name;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("open_append_file appends to a regular file and creates one") {
  TempDir dir;
  write(dir / "log", "one\n");
  {
    cohort::Fd fd = open_append_file(dir / "log");
    REQUIRE(::write(fd.get(), "two\n", 4) == 4);
  }
  CHECK(contents(dir / "log") == "one\ntwo\n");
  CHECK(open_append_file(dir / "new").valid());
  CHECK(fs::is_regular_file(dir / "new"));
}

TEST_CASE("open_append_file refuses a FIFO at once, with or without a reader") {
  TempDir dir;
  std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(open_append_file(fifo),
                    "'" + fifo + "' is a FIFO; cohortrun writes only regular files");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  cohort::Fd reader(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK));
  REQUIRE(reader.valid());
  CHECK_THROWS_WITH(open_append_file(fifo),
                    "'" + fifo + "' is a FIFO; cohortrun writes only regular files");
}

TEST_CASE("open_append_file refuses a symbolic link, a device and a directory") {
  TempDir dir;
  write(dir / "target", "kept\n");
  fs::create_symlink(dir / "target", dir / "link");
  CHECK_THROWS_WITH(
      open_append_file(dir / "link"),
      "'" + (dir / "link") + "' is a symbolic link; cohortrun writes only regular files");
  CHECK(contents(dir / "target") == "kept\n");
  fs::create_symlink(dir / "absent", dir / "dangling");
  CHECK_THROWS_WITH(open_append_file(dir / "dangling"), Catch::Matchers::Contains("symbolic link"));
  CHECK_FALSE(fs::exists(dir / "absent"));
  CHECK_THROWS_WITH(open_append_file("/dev/null"),
                    "'/dev/null' is a character device; cohortrun writes only regular files");
  CHECK_THROWS_WITH(
      open_append_file(dir.path.string()),
      "'" + dir.path.string() + "' is a directory; cohortrun writes only regular files");
  CHECK_THROWS_WITH(open_append_file(dir / "no/such/dir"),
                    Catch::Matchers::StartsWith("cannot open '" + (dir / "no/such/dir") + "': "));
}

TEST_CASE("write_file_atomically replaces a regular file, readable by others, leaving no temp") {
  TempDir dir;
  write(dir / "metrics", "old\n");
  write_file_atomically(dir / "metrics", "new\n");
  CHECK(contents(dir / "metrics") == "new\n");
  CHECK((fs::status(dir / "metrics").permissions() & fs::perms::others_read) != fs::perms::none);
  CHECK(entries(dir.path) == 1);
  write_file_atomically(dir / "fresh", "x");
  CHECK(contents(dir / "fresh") == "x");
}

TEST_CASE("write_file_atomically never follows a planted temporary link") {
  TempDir dir;
  write(dir / "victim", "precious\n");
  // The old code wrote METRICS.tmp with O_TRUNC through whatever was there.
  fs::create_symlink(dir / "victim", dir / "metrics.tmp");
  write_file_atomically(dir / "metrics", "metrics\n");
  CHECK(contents(dir / "victim") == "precious\n");
  CHECK(contents(dir / "metrics") == "metrics\n");
  CHECK(fs::is_symlink(dir / "metrics.tmp"));
}

TEST_CASE("write_file_atomically refuses a target that is not a regular file, writing nothing") {
  TempDir dir;
  write(dir / "victim", "precious\n");
  fs::create_symlink(dir / "victim", dir / "link");
  CHECK_THROWS_WITH(
      write_file_atomically(dir / "link", "x"),
      "'" + (dir / "link") + "' is a symbolic link; cohortrun writes only regular files");
  CHECK(fs::is_symlink(dir / "link"));
  CHECK(contents(dir / "victim") == "precious\n");
  CHECK_THROWS_WITH(write_file_atomically("/dev/null", "x"),
                    "'/dev/null' is a character device; cohortrun writes only regular files");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(write_file_atomically(dir / "fifo", "x"), Catch::Matchers::Contains("a FIFO"));
  fs::create_directory(dir / "sub");
  CHECK_THROWS_WITH(write_file_atomically(dir / "sub", "x"),
                    Catch::Matchers::Contains("a directory"));
  CHECK(entries(dir.path) == 4);  // victim, link, fifo, sub: no temporary file left
}
