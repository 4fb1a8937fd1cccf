// The checkpoint directory itself, in a world of one: save() and load_latest() write into and read
// from a directory only by its own name. A symbolic link there (to a directory or dangling), a
// FIFO, a file or /dev/null is refused at once with a CheckpointError naming it, and nothing is
// written through it; the directories above it are followed.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>

#include "checkpoint_values.h"
#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"
#include "test/common/scratch_dir.h"

namespace fs = std::filesystem;
using cohort::CheckpointError;
using cohort::testing::ScratchDir;
using namespace cohort::elastic;

TEST_CASE("a checkpoint directory that is a link a FIFO a file or a device is refused") {
  cohort::init();
  ScratchDir scratch("checkpoint_dir");
  fs::path real = scratch.path / "real";
  fs::create_directory(real);
  fs::create_directory_symlink(real, scratch.path / "link");
  fs::create_symlink(scratch.path / "absent", scratch.path / "dangling");
  REQUIRE(::mkfifo((scratch.path / "fifo").c_str(), 0600) == 0);
  cohort::testing::write_text(scratch / "file", "not a directory");
  test::Values v(1, 256);
  v.commit_generation(1);
  const std::pair<fs::path, std::string> refused[] = {
      {scratch.path / "link",
       "is a symbolic link; Cohort writes into a directory only by its own "
       "name, never through a link (name the directory it points to)"},
      {scratch.path / "dangling", "is a symbolic link;"},
      {scratch.path / "fifo", "is a FIFO, not a directory"},
      {scratch.path / "file", "is a regular file, not a directory"},
      {"/dev/null", "is a character device, not a directory"}};
  auto start = std::chrono::steady_clock::now();
  for (const auto& [dir, what] : refused) {
    CAPTURE(dir);
    std::string expected = "checkpoint directory '" + dir.string() + "' " + what;
    CHECK_THROWS_AS(save(v.state, dir), CheckpointError);
    CHECK_THROWS_WITH(save(v.state, dir), Catch::Contains(expected));
    test::Values loaded(0, 256);
    CHECK_THROWS_WITH(load_latest(loaded.state, dir), Catch::Contains(expected));
    CHECK(loaded.generation_matches(0));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(fs::is_empty(real));  // nothing written through the link
  CHECK_FALSE(fs::exists(scratch.path / "absent"));
  CHECK(fs::is_fifo(scratch.path / "fifo"));
}

TEST_CASE("the directories above a checkpoint directory are followed") {
  cohort::init();
  ScratchDir scratch("checkpoint_dir_above");
  fs::create_directory(scratch.path / "real");
  fs::create_directory_symlink(scratch.path / "real", scratch.path / "link");
  test::Values v(1, 256);
  v.commit_generation(1);
  CheckpointInfo info = save(v.state, scratch.path / "link" / "ckpt");
  CHECK(fs::is_regular_file(scratch.path / "real" / "ckpt" / fs::path(info.path).filename()));
  test::Values loaded(0, 256);
  REQUIRE(load_latest(loaded.state, scratch.path / "link" / "ckpt"));
  CHECK(loaded.generation_matches(1));
}
