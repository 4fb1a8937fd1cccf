// base/directory.h: a directory Cohort writes into is opened by its own name: a link there (to a
// directory, dangling), a FIFO, a device or a file is refused naming it, at once, and nothing is
// made through it; the directories above it are the operator's and are followed.
#include "base/directory.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "base/file_kind.h"
#include "test/common/scratch_dir.h"

using namespace cohort::files;
using Catch::Matchers::Contains;
using cohort::testing::entry_count;
using cohort::testing::ScratchDir;
using cohort::testing::write_text;
using Create = Directory::Create;
namespace fs = std::filesystem;

TEST_CASE("open makes a missing directory and the ones above it") {
  ScratchDir dir;
  Directory made = Directory::open(dir / "a/b/c", Create::kYes);
  CHECK(fs::is_directory(dir / "a/b/c"));
  CHECK(made.path() == dir / "a/b/c");
  CHECK(made.path_of("x") == dir / "a/b/c/x");
  Directory child = made.child("round.1", Create::kYes).child("rank.0", Create::kYes);
  CHECK(fs::is_directory(dir / "a/b/c/round.1/rank.0"));
  CHECK(child.path() == dir / "a/b/c/round.1/rank.0");
  CHECK(Directory::open(dir / "a/b/c/", Create::kNo).path_of("x") == dir / "a/b/c/x");
  CHECK_FALSE(Directory::open_if_exists(dir / "absent").has_value());
  CHECK_THROWS_WITH(Directory::open(dir / "absent", Create::kNo),
                    "cannot open directory '" + (dir / "absent") + "': No such file or directory");
}

TEST_CASE("a directory that is a link a dangling link a FIFO a file or a device is refused") {
  ScratchDir dir;
  fs::create_directory(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  fs::create_symlink(dir / "absent", dir / "dangling");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  write_text(dir / "file", "x");
  std::string link_refusal =
      " is a symbolic link; Cohort writes into a directory only by its own name, never through a "
      "link (name the directory it points to)";
  auto start = std::chrono::steady_clock::now();
  for (Create create : {Create::kNo, Create::kYes}) {
    CHECK_THROWS_WITH(Directory::open(dir / "link", create),
                      "'" + (dir / "link") + "'" + link_refusal);
    CHECK_THROWS_WITH(Directory::open(dir / "dangling", create),
                      "'" + (dir / "dangling") + "'" + link_refusal);
    CHECK_THROWS_WITH(Directory::open(dir / "fifo", create),
                      "'" + (dir / "fifo") + "' is a FIFO, not a directory");
    CHECK_THROWS_WITH(Directory::open(dir / "file", create),
                      "'" + (dir / "file") + "' is a regular file, not a directory");
    CHECK_THROWS_WITH(Directory::open("/dev/null", create),
                      "'/dev/null' is a character device, not a directory");
    CHECK_THROWS_AS(Directory::open(dir / "fifo", create), RefusedFile);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK(fs::is_empty(dir / "elsewhere"));
  CHECK_FALSE(fs::exists(dir / "absent"));
  // The directories above are followed: they are the operator's.
  CHECK(Directory::open(dir / "link/made", Create::kYes).path() == dir / "link/made");
  CHECK(fs::is_directory(dir / "elsewhere/made"));
}

TEST_CASE("a link planted where a child directory is made is refused, not followed") {
  ScratchDir dir;
  fs::create_directory(dir / "out");
  fs::create_directory(dir / "victim");
  fs::create_directory_symlink(dir / "victim", dir / "out/rank.0");
  Directory out = Directory::open(dir / "out", Create::kNo);
  CHECK_THROWS_WITH(out.child("rank.0", Create::kYes), Contains("is a symbolic link"));
  CHECK(entry_count(dir / "victim") == 0);
}

TEST_CASE("of_file opens a file's directory and names what is no file") {
  ScratchDir dir;
  auto [d, name] = Directory::of_file(dir / "timeline.json");
  CHECK(name == "timeline.json");
  CHECK(d.path_of(name) == dir / "timeline.json");
  auto [here, bare] = Directory::of_file("bare.json");
  CHECK(here.path_of(bare) == "bare.json");
  CHECK(Directory::of_file("/x").first.path_of("x") == "/x");
  CHECK_THROWS_AS(Directory::of_file(dir / "sub/"), cohort::InvalidArgument);
  CHECK_THROWS_AS(Directory::of_file(""), cohort::InvalidArgument);
  CHECK_THROWS_WITH(Directory::of_file(dir / "missing/t.json"),
                    "cannot write '" + (dir / "missing/t.json") + "': its directory '" +
                        (dir / "missing") + "' cannot be opened: No such file or directory");
}

TEST_CASE("names lists every entry and sync succeeds") {
  ScratchDir dir;
  write_text(dir / "a", "");
  fs::create_directory(dir / "b");
  Directory d = Directory::open(dir.path.string(), Create::kNo);
  for (int i = 0; i < 2; ++i) {  // twice: a second listing starts from the beginning too
    auto names = d.names();
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"a", "b"});
  }
  CHECK_NOTHROW(d.sync());
  CHECK(d.entry("a").has_value());
  CHECK_FALSE(d.entry("c").has_value());
}
