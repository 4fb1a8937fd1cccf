// base/safe_write.h on what can lie at a name Cohort writes: a regular file, a symbolic link (to a
// file, dangling), a FIFO (with and without a reader), a directory and /dev/null. Nothing but a
// regular file is written, nothing is followed or truncated, and a FIFO never blocks.
#include "base/safe_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "base/file_kind.h"
#include "test/common/scratch_dir.h"

using namespace cohort::files;
using Catch::Matchers::Contains;
using cohort::testing::contents;
using cohort::testing::entry_count;
using cohort::testing::ScratchDir;
using cohort::testing::write_text;
namespace fs = std::filesystem;

namespace {

std::string refusal(const std::string& path, const std::string& kind) {
  return "'" + path + "' is " + kind + "; Cohort writes only regular files";
}

// Every non-regular target, each made in `dir`: its path and the kind the refusal names.
std::vector<std::pair<std::string, std::string>> special_targets(const ScratchDir& dir) {
  write_text(dir / "victim", "precious\n");
  fs::create_symlink(dir / "victim", dir / "link");
  fs::create_symlink(dir / "absent", dir / "dangling");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  fs::create_directory(dir / "sub");
  return {{dir / "link", "a symbolic link"},
          {dir / "dangling", "a symbolic link"},
          {dir / "fifo", "a FIFO"},
          {dir / "sub", "a directory"},
          {"/dev/null", "a character device"}};
}

// The targets are still what they were and nothing else appeared.
void check_untouched(const ScratchDir& dir) {
  CHECK(contents(dir / "victim") == "precious\n");
  CHECK(fs::is_symlink(dir / "link"));
  CHECK_FALSE(fs::exists(dir / "absent"));
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(fs::is_empty(dir / "sub"));
  CHECK(fs::is_character_file("/dev/null"));
  CHECK(entry_count(dir.path) == 5);  // victim, link, dangling, fifo, sub: no temporary left
}

}  // namespace

TEST_CASE("open_append appends to a regular file and creates a missing one") {
  ScratchDir dir;
  write_text(dir / "log", "one\n");
  {
    cohort::Fd fd = open_append(dir / "log");
    REQUIRE(::write(fd.get(), "two\n", 4) == 4);
    CHECK((::fcntl(fd.get(), F_GETFL) & O_NONBLOCK) == 0);  // writes block as usual
  }
  CHECK(contents(dir / "log") == "one\ntwo\n");
  CHECK(open_append(dir / "new").valid());
  CHECK(fs::is_regular_file(dir / "new"));
}

TEST_CASE("open_append refuses a link a dangling link a FIFO a directory and /dev/null") {
  ScratchDir dir;
  auto targets = special_targets(dir);
  auto start = std::chrono::steady_clock::now();
  for (const auto& [path, kind] : targets) {
    CHECK_THROWS_AS(open_append(path), RefusedFile);
    CHECK_THROWS_WITH(open_append(path), refusal(path, kind));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  check_untouched(dir);
  cohort::Fd reader(::open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK));
  REQUIRE(reader.valid());  // a FIFO with a reader is refused too
  CHECK_THROWS_WITH(open_append(dir / "fifo"), refusal(dir / "fifo", "a FIFO"));
  CHECK_THROWS_WITH(open_append(dir / "no/such/dir/log"),
                    Contains("its directory '" + (dir / "no/such/dir") + "' cannot be opened"));
}

TEST_CASE("write_file_atomically replaces a regular file whole and leaves no temporary") {
  ScratchDir dir;
  write_text(dir / "metrics", "old\n");
  fs::create_hard_link(dir / "metrics", dir / "other-name");
  write_file_atomically(dir / "metrics", "new\n");
  CHECK(contents(dir / "metrics") == "new\n");
  CHECK(contents(dir / "other-name") == "old\n");  // replaced, not truncated in place
  CHECK(entry_count(dir.path) == 2);
  write_file_atomically(dir / "shared", "x", {.mode = 0644, .exact_mode = true});
  mode_t mask = ::umask(077);
  write_file_atomically(dir / "exact", "x", {.mode = 0644, .exact_mode = true});
  write_file_atomically(dir / "masked", "x");
  ::umask(mask);
  CHECK((fs::status(dir / "exact").permissions() & fs::perms::others_read) != fs::perms::none);
  CHECK((fs::status(dir / "masked").permissions() & fs::perms::others_read) == fs::perms::none);
}

TEST_CASE("write_file_atomically refuses what is not a regular file and writes nothing") {
  ScratchDir dir;
  auto targets = special_targets(dir);
  for (const auto& [path, kind] : targets) {
    CHECK_THROWS_AS(write_file_atomically(path, "x"), RefusedFile);
    CHECK_THROWS_WITH(write_file_atomically(path, "x"), refusal(path, kind));
  }
  check_untouched(dir);
  CHECK_THROWS_WITH(check_replaceable(dir / "fifo"), refusal(dir / "fifo", "a FIFO"));
  CHECK_NOTHROW(check_replaceable(dir / "victim"));
  CHECK_NOTHROW(check_replaceable(dir / "absent"));
  CHECK_THROWS_WITH(check_replaceable(dir / "missing/x"), Contains("cannot be opened"));
}

TEST_CASE("a link planted at a temporary name is never written through") {
  ScratchDir dir;
  write_text(dir / "victim", "precious\n");
  fs::create_symlink(dir / "victim", dir / "metrics.tmp");  // the name an old writer used
  write_file_atomically(dir / "metrics", "metrics\n");
  CHECK(contents(dir / "victim") == "precious\n");
  CHECK(contents(dir / "metrics") == "metrics\n");
  // A fixed temporary name: a leftover there (a link, a FIFO) is removed, not followed.
  auto [d, name] = Directory::of_file(dir / "ckpt");
  fs::create_symlink(dir / "victim", dir / ".ckpt.tmp");
  {
    ReplacingFile file(d, name, {.temp_name = ".ckpt.tmp"});
    CHECK(fs::is_regular_file(fs::symlink_status(dir / ".ckpt.tmp")));
    file.write("checkpoint");
    file.publish();
  }
  CHECK(contents(dir / "ckpt") == "checkpoint");
  CHECK(contents(dir / "victim") == "precious\n");
  CHECK_FALSE(fs::exists(fs::symlink_status(dir / ".ckpt.tmp")));
}

TEST_CASE("a published file keeps its descriptor and an unpublished one is removed") {
  ScratchDir dir;
  auto [d, name] = Directory::of_file(dir / "timeline.json");
  cohort::Fd fd;
  {
    ReplacingFile file(d, name);
    file.write("[");
    CHECK_FALSE(fs::exists(dir / "timeline.json"));
    CHECK_THROWS_WITH(file.release(), Contains("released before it was published"));
    file.publish();
    fd = file.release();
  }
  REQUIRE(::write(fd.get(), "]\n", 2) == 2);
  CHECK(contents(dir / "timeline.json") == "[]\n");
  {
    ReplacingFile abandoned(d, "never");
    abandoned.write("x");
  }
  CHECK(entry_count(dir.path) == 1);
}

TEST_CASE("publish refuses a name that became a FIFO after the file was made") {
  ScratchDir dir;
  auto [d, name] = Directory::of_file(dir / "out");
  ReplacingFile file(d, name);
  REQUIRE(::mkfifo((dir / "out").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(file.publish(), refusal(dir / "out", "a FIFO"));
  CHECK(fs::is_fifo(dir / "out"));
}
