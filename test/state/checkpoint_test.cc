// Durable checkpoints in a world of one: round trips, pruning, damaged files, mismatches, I/O
// errors.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cereal/types/string.hpp>
#include <csignal>
#include <fstream>

#include "checkpoint_values.h"
#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"

namespace fs = std::filesystem;
using cohort::CheckpointError;
using cohort::InvalidArgument;
using namespace cohort::elastic;

namespace {

// An empty scratch directory (not created yet), removed with everything in it at the end.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("cohort-ckpt-test-" + std::to_string(getpid()) + "-" + name)) {
    fs::remove_all(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  operator const fs::path&() const { return path; }
  fs::path operator/(const std::string& s) const { return path / s; }
};

std::vector<std::string> files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("checkpoint round trip of buffers, objects and a sampler into fresh values") {
  cohort::init();
  ScratchDir dir("roundtrip");
  test::Values saved(3, 1 << 10);
  saved.commit_generation(3);
  CheckpointInfo info = save(saved.state, dir);
  CHECK(info.sequence == 1);
  CHECK(info.commit_count == 1);
  CHECK(fs::exists(info.path));

  test::Values loaded(0, 1 << 10);
  auto got = load_latest(loaded.state, dir);
  REQUIRE(got);
  CHECK(got->sequence == 1);
  CHECK(loaded.generation_matches(3));
  CHECK(loaded.state.commit_count() == 1);
  CHECK(loaded.sampler.unprocessed() == saved.sampler.unprocessed());
  // The load is the restore point.
  loaded.weights[0] = -1.0f;
  loaded.state.restore();
  CHECK(loaded.generation_matches(3));
}

TEST_CASE("save writes the last commit, not the values as they are now") {
  cohort::init();
  ScratchDir dir("last-commit");
  test::Values v(1, 256);
  v.commit_generation(1);
  v.weights.assign(v.weights.size(), 99.0f);
  v.tag = "uncommitted";
  save(v.state, dir);
  test::Values loaded(0, 256);
  REQUIRE(load_latest(loaded.state, dir));
  CHECK(loaded.generation_matches(1));
}

TEST_CASE("an empty or missing directory loads nothing and changes nothing") {
  cohort::init();
  test::Values v(2, 64);
  v.commit_generation(2);
  CHECK_FALSE(load_latest(v.state, ScratchDir("missing")));
  ScratchDir empty("empty");
  fs::create_directories(empty);
  CHECK_FALSE(load_latest(v.state, empty));
  CHECK(v.generation_matches(2));
}

TEST_CASE("save keeps the newest keep_last checkpoints and removes leftover temporaries") {
  cohort::init();
  ScratchDir dir("prune");
  fs::create_directories(dir);
  std::ofstream(dir / ".ckpt-00000000000000000009.cohort.tmp") << "left by a crash";
  test::Values v(1, 64);
  for (int g = 1; g <= 5; ++g) {
    v.commit_generation(g);
    save(v.state, dir, {.keep_last = 2});
  }
  CHECK(files(dir) == std::vector<std::string>{"ckpt-00000000000000000004.cohort",
                                               "ckpt-00000000000000000005.cohort"});
  test::Values loaded(0, 64);
  CHECK(load_latest(loaded.state, dir)->sequence == 5);
  CHECK(loaded.generation_matches(5));
  CHECK_THROWS_AS(save(v.state, dir, {.keep_last = 0}), InvalidArgument);
}

TEST_CASE("load skips damaged newer checkpoints and takes the newest good one") {
  cohort::init();
  ScratchDir dir("damaged");
  test::Values v(1, 4096);
  v.commit_generation(1);
  save(v.state, dir, {.keep_last = 10});
  v.commit_generation(2);
  std::string good2 = save(v.state, dir, {.keep_last = 10}).path;
  auto damage = [&](const std::string& name, auto how) {
    fs::copy_file(good2, dir / name);
    how(dir / name);
  };
  damage("ckpt-00000000000000000003.cohort", [](const fs::path& p) {  // a flipped byte
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5000);
    f.put('\x5a');
  });
  damage("ckpt-00000000000000000004.cohort",
         [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) / 2); });  // truncated
  damage("ckpt-00000000000000000005.cohort", [](const fs::path& p) { fs::resize_file(p, 0); });
  damage("ckpt-00000000000000000006.cohort", [](const fs::path& p) {  // not ours at all
    std::ofstream(p, std::ios::trunc)
        << "garbage that is long enough to hold a header but is not one at all, really";
  });
  damage(".ckpt-00000000000000000007.cohort.tmp", [](const fs::path&) {});  // never loaded
  test::Values loaded(0, 4096);
  auto got = load_latest(loaded.state, dir);
  REQUIRE(got);
  CHECK(got->sequence == 2);
  CHECK(loaded.generation_matches(2));
}

TEST_CASE("a checkpoint cut at any byte offset is skipped for the previous one") {
  cohort::init();
  ScratchDir dir("cut");
  test::Values v(1, 4096);
  v.commit_generation(1);
  save(v.state, dir, {.keep_last = 10});
  v.commit_generation(2);
  std::string newest = save(v.state, dir, {.keep_last = 10}).path;
  uint64_t size = fs::file_size(newest);
  std::vector<uint64_t> offsets = {0, 1, 8, 12, 16, 24, 56, 63, 64, 65, size / 2, size - 1};
  for (uint64_t at = 100; at < size; at += size / 37) offsets.push_back(at);
  fs::path cut = dir / "ckpt-00000000000000000003.cohort";
  for (uint64_t at : offsets) {
    INFO("cut at byte " << at << " of " << size);
    fs::copy_file(newest, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, at);
    test::Values loaded(0, 4096);
    REQUIRE(load_latest(loaded.state, dir)->sequence == 2);
    CHECK(loaded.generation_matches(2));
  }
}

TEST_CASE("a checkpoint that does not match the tracked values is refused, changing nothing") {
  cohort::init();
  ScratchDir dir("mismatch");
  test::Values v(1, 128);
  v.commit_generation(1);
  save(v.state, dir);
  {
    test::Values other(7, 64);  // a different buffer size
    CHECK_THROWS_WITH(load_latest(other.state, dir),
                      Catch::Contains("'weights' is float32, 512 bytes in it"));
    CHECK(other.generation_matches(7));
  }
  {
    State state;
    std::vector<float> weights(128);
    state.track("weights", weights);
    CHECK_THROWS_WITH(load_latest(state, dir), Catch::Contains("which is not tracked"));
  }
  {
    test::Values other(7, 128);
    int extra = 5;
    other.state.track("extra", extra);
    CHECK_THROWS_WITH(load_latest(other.state, dir),
                      Catch::Contains("'extra' is tracked but not in it"));
    CHECK(other.generation_matches(7));
  }
  {
    State state;  // same names, another type for an object
    std::vector<float> weights(128);
    std::vector<int32_t> steps(3);
    double tag = 0;
    ElasticSampler sampler(test::kSamples, 1);
    state.track("weights", weights);
    state.track("steps", steps);
    state.track("tag", tag);
    state.track("sampler", sampler);
    CHECK_THROWS_WITH(load_latest(state, dir), Catch::Contains("'tag' has type"));
  }
}

TEST_CASE("save without a commit, or with a value tracked after it, is refused") {
  cohort::init();
  ScratchDir dir("refused");
  State state;
  int x = 1;
  state.track("x", x);
  CHECK_THROWS_WITH(save(state, dir), Catch::Contains("no commit"));
  state.commit();
  int y = 2;
  state.track("y", y);
  CHECK_THROWS_WITH(save(state, dir), Catch::Contains("'y' was tracked after the last commit"));
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("I/O errors raise CheckpointError and leave the previous checkpoint loadable") {
  cohort::init();
  ScratchDir dir("io-errors");
  test::Values v(1, 1 << 16);
  v.commit_generation(1);
  save(v.state, dir);
  v.commit_generation(2);

  // The file size limit makes write() fail with EFBIG, as a full disk fails with ENOSPC.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 100'000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  CHECK_THROWS_WITH(save(v.state, dir),
                    Catch::Contains("write failed") && Catch::Contains("File too large"));
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  CHECK(files(dir) == std::vector<std::string>{"ckpt-00000000000000000001.cohort"});

  fs::path blocked = dir / "not-a-directory";
  std::ofstream(blocked) << "a file";
  CHECK_THROWS_AS(save(v.state, blocked / "sub"), CheckpointError);
  CHECK_THROWS_AS(load_latest(v.state, blocked), CheckpointError);

  test::Values loaded(0, 1 << 16);
  REQUIRE(load_latest(loaded.state, dir));
  CHECK(loaded.generation_matches(1));
}
