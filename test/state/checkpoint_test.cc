// Durable checkpoints in a world of one: round trips, pruning, damaged files, mismatches, I/O
// errors, and what else a checkpoint directory may hold (non-regular entries named like
// checkpoints, a sequence that cannot be followed, leftovers of crashed saves).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cereal/types/string.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

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

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What the code under test writes to std::cerr (the checkpoint warnings) while it lives.
struct CaptureCerr {
  std::ostringstream text;
  std::streambuf* old = std::cerr.rdbuf(text.rdbuf());
  ~CaptureCerr() { std::cerr.rdbuf(old); }
  std::string str() const { return text.str(); }
};

constexpr const char* kMaxName = "ckpt-18446744073709551615.cohort";  // 2^64 - 1

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

TEST_CASE("a checkpoint at the largest sequence makes save refuse, never wrap to 0") {
  cohort::init();
  ScratchDir dir("max-sequence");
  test::Values v(1, 256);
  v.commit_generation(1);
  save(v.state, dir, {.keep_last = 1});
  std::ofstream(dir / kMaxName) << "a stray file";
  auto before = files(dir);
  v.commit_generation(2);
  // Wrapping to sequence 0 would make the new file the oldest, pruned at once by keep_last = 1.
  CHECK_THROWS_AS(save(v.state, dir, {.keep_last = 1}), CheckpointError);
  CHECK_THROWS_WITH(save(v.state, dir, {.keep_last = 1}),
                    Catch::Contains(kMaxName) && Catch::Contains("largest possible sequence"));
  CHECK(files(dir) == before);
  {
    test::Values loaded(0, 256);
    CaptureCerr err;
    CHECK(load_latest(loaded.state, dir)->sequence == 1);  // the stray file is damaged
    CHECK(loaded.generation_matches(1));
  }

  // One below the largest: that save succeeds and is the newest; the next one is refused.
  fs::remove(dir / kMaxName);
  std::ofstream(dir / "ckpt-18446744073709551614.cohort") << "another stray file";
  CheckpointInfo last = save(v.state, dir, {.keep_last = 1});
  CHECK(last.sequence == UINT64_MAX);
  CHECK(files(dir) == std::vector<std::string>{kMaxName});
  v.commit_generation(3);
  CHECK_THROWS_WITH(save(v.state, dir), Catch::Contains(kMaxName));
  test::Values loaded(0, 256);
  CHECK(load_latest(loaded.state, dir)->sequence == UINT64_MAX);
  CHECK(loaded.generation_matches(2));
}

TEST_CASE("a name whose number is beyond 2^64 - 1 is not a checkpoint") {
  cohort::init();
  ScratchDir dir("beyond-max");
  test::Values v(1, 256);
  v.commit_generation(1);
  std::string first = save(v.state, dir).path;
  fs::copy_file(first, dir / "ckpt-99999999999999999999.cohort");  // would wrap when parsed
  v.commit_generation(2);
  CHECK(save(v.state, dir).sequence == 2);
  test::Values loaded(0, 256);
  CHECK(load_latest(loaded.state, dir)->sequence == 2);
  CHECK(loaded.generation_matches(2));
}

TEST_CASE("a symbolic link named like the newest checkpoint is skipped, even to /dev/zero") {
  cohort::init();
  ScratchDir dir("symlink");
  test::Values v(1, 256);
  v.commit_generation(1);
  std::string good = save(v.state, dir).path;
  // Read to its end, /dev/zero never ends: the loader used to allocate until bad_alloc.
  fs::create_symlink("/dev/zero", dir / "ckpt-00000000000000000003.cohort");
  fs::create_symlink(good, dir / "ckpt-00000000000000000002.cohort");  // links are not followed
  test::Values loaded(0, 256);
  CaptureCerr err;
  auto got = load_latest(loaded.state, dir);
  REQUIRE(got);
  CHECK(got->sequence == 1);
  CHECK(loaded.generation_matches(1));
  CHECK_THAT(err.str(), Catch::Contains("ckpt-00000000000000000003.cohort' is a symbolic link"));
  CHECK_THAT(err.str(), Catch::Contains("ckpt-00000000000000000002.cohort' is a symbolic link"));
}

TEST_CASE("a FIFO named like the newest checkpoint neither hangs the load nor stops it") {
  cohort::init();
  ScratchDir dir("fifo");
  test::Values v(1, 256);
  v.commit_generation(1);
  save(v.state, dir);
  fs::path fifo = dir / "ckpt-00000000000000000002.cohort";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  test::Values loaded(0, 256);
  CaptureCerr err;
  // The load runs in a thread so that a load blocked in open() fails the test instead of hanging
  // it: after the bounded wait the test opens the FIFO's other end, which releases the open.
  auto done = std::async(std::launch::async, [&] { return load_latest(loaded.state, dir); });
  bool finished = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!finished) {
    int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
  }
  CHECK(finished);
  auto got = done.get();
  REQUIRE(got);
  CHECK(got->sequence == 1);
  CHECK(loaded.generation_matches(1));
  CHECK_THAT(err.str(), Catch::Contains("'" + fifo.string() + "' is a FIFO"));
}

TEST_CASE("a directory or a socket named like a checkpoint is skipped, and never pruned") {
  cohort::init();
  ScratchDir dir("directory");
  test::Values v(1, 256);
  v.commit_generation(1);
  save(v.state, dir);
  fs::path sub = dir / "ckpt-00000000000000000003.cohort";
  fs::create_directories(sub);
  std::ofstream(sub / "something") << "the user's";
  fs::path sock = dir / "ckpt-00000000000000000002.cohort";
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock.string().size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  {
    test::Values loaded(0, 256);
    CaptureCerr err;
    auto got = load_latest(loaded.state, dir);
    REQUIRE(got);
    CHECK(got->sequence == 1);
    CHECK(loaded.generation_matches(1));
    CHECK_THAT(err.str(), Catch::Contains("'" + sub.string() + "' is a directory"));
    CHECK_THAT(err.str(), Catch::Contains("'" + sock.string() + "' is a socket"));
  }
  // The next save follows every name (it never takes one that exists) and prunes only files.
  v.commit_generation(2);
  CHECK(save(v.state, dir, {.keep_last = 1}).sequence == 4);
  close(s);
  CHECK(files(dir) == std::vector<std::string>{"ckpt-00000000000000000002.cohort",
                                               "ckpt-00000000000000000003.cohort",
                                               "ckpt-00000000000000000004.cohort"});
  CHECK(fs::is_directory(sub));
  CHECK(fs::exists(sub / "something"));
  test::Values loaded(0, 256);
  CaptureCerr err;
  CHECK(load_latest(loaded.state, dir)->sequence == 4);
  CHECK(loaded.generation_matches(2));
}

TEST_CASE("leftover temporaries are removed before the new checkpoint is written") {
  cohort::init();
  ScratchDir dir("leftovers");
  test::Values v(1, 256);
  v.commit_generation(1);
  save(v.state, dir);
  fs::path old_tmp = dir / ".ckpt-00000000000000000009.cohort.tmp";
  std::ofstream(old_tmp) << "left by a crash, maybe large enough to fill the disk";
  fs::path fifo_tmp = dir / ".ckpt-00000000000000000008.cohort.tmp";
  REQUIRE(mkfifo(fifo_tmp.c_str(), 0600) == 0);
  // A leftover under the very name the save writes next, linked to a file outside: written
  // through, it would be destroyed and the checkpoint would end up a link.
  ScratchDir outside("leftovers-outside");
  fs::create_directories(outside);
  std::ofstream(outside / "precious") << "not a checkpoint";
  fs::create_symlink(outside / "precious", dir / ".ckpt-00000000000000000002.cohort.tmp");

  v.commit_generation(2);
  std::vector<std::string> when_created;
  CheckpointInfo info = save(v.state, dir, {.on_progress = [&](SaveStage stage, uint64_t) {
                               if (stage == SaveStage::kCreated) when_created = files(dir);
                             }});
  CHECK(when_created == std::vector<std::string>{".ckpt-00000000000000000002.cohort.tmp",
                                                 "ckpt-00000000000000000001.cohort"});
  CHECK(files(dir) == std::vector<std::string>{"ckpt-00000000000000000001.cohort",
                                               "ckpt-00000000000000000002.cohort"});
  CHECK(read_text(outside / "precious") == "not a checkpoint");
  CHECK_FALSE(fs::is_symlink(info.path));
  test::Values loaded(0, 256);
  CHECK(load_latest(loaded.state, dir)->sequence == 2);
  CHECK(loaded.generation_matches(2));
}

TEST_CASE("a damaged header size field is reported as such, not as a format version") {
  cohort::init();
  ScratchDir dir("header-size");
  test::Values v(1, 256);
  v.commit_generation(1);
  std::string good = save(v.state, dir, {.keep_last = 10}).path;
  fs::path bad = dir / "ckpt-00000000000000000002.cohort";
  fs::copy_file(good, bad);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);  // the u32 header size, after the magic and the version
    f.put('\x4d');
  }
  test::Values loaded(0, 256);
  CaptureCerr err;
  CHECK(load_latest(loaded.state, dir)->sequence == 1);
  CHECK_THAT(err.str(), Catch::Contains(bad.string()) &&
                            Catch::Contains("header size field says 77 bytes, not 64"));
  CHECK_THAT(err.str(), !Catch::Contains("unknown format version"));
}
