// base/read_file.h: a file cohortrun reads is read whole only up to its cap: /dev/zero, an
// oversize file and an endless pipe are refused at once with the file and the cap named, never
// allocated; a FIFO or a pipe is read where the rule allows one, within its timeout.
#include "base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "base/file_kind.h"
#include "test/common/scratch_dir.h"

using namespace cohort::files;
using Catch::Matchers::Contains;
using cohort::testing::ScratchDir;
using cohort::testing::write_text;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const ReadRule kHostfile{
    .what = "hostfile", .max_bytes = 1 << 20, .pipes = true, .pipe_timeout = 2000ms};
const ReadRule kKey{.what = "etcd key file", .max_bytes = 4 << 20};

// A pipe's read end seen as a path, as bash's `<(...)` hands one over (/dev/fd/N).
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    std::signal(SIGPIPE, SIG_IGN);
  }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fds[0]); }
  void close_writer() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

}  // namespace

TEST_CASE("a regular file within its cap is read whole and links to it are followed") {
  ScratchDir dir;
  write_text(dir / "hosts", "node1 slots=2\n");
  fs::create_symlink(dir / "hosts", dir / "..data-hosts");  // as a ConfigMap volume mounts it
  CHECK(read_bounded(dir / "hosts", kHostfile) == "node1 slots=2\n");
  CHECK(read_bounded(dir / "..data-hosts", kHostfile) == "node1 slots=2\n");
  write_text(dir / "exact", std::string(1 << 20, 'x'));
  CHECK(read_bounded(dir / "exact", kHostfile).size() == (1 << 20));
}

TEST_CASE("/dev/zero is refused at once naming the cap") {
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(read_bounded("/dev/zero", kHostfile),
                    "hostfile '/dev/zero' is a character device; Cohort reads it only from a "
                    "regular file or a pipe, of at most 1 MiB");
  CHECK_THROWS_AS(read_bounded("/dev/zero", kHostfile), RefusedFile);
  CHECK_THROWS_WITH(read_bounded("/dev/zero", kKey),
                    "etcd key file '/dev/zero' is a character device; Cohort reads it only from a "
                    "regular file of at most 4 MiB");
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("an oversize regular file is refused before it is read") {
  ScratchDir dir;
  write_text(dir / "big", std::string((1 << 20) + 1, 'x'));
  CHECK_THROWS_WITH(read_bounded(dir / "big", kHostfile),
                    "hostfile '" + (dir / "big") +
                        "' holds 1048577 bytes, more than the 1 MiB Cohort reads of it");
  // A sparse file of 1 TiB: refused by its size alone, nothing read or allocated.
  { std::ofstream(dir / "sparse"); }
  fs::resize_file(dir / "sparse", 1ULL << 40);
  CHECK_THROWS_WITH(read_bounded(dir / "sparse", kHostfile), Contains("holds 1099511627776 bytes"));
}

TEST_CASE("a directory or a FIFO is refused and a missing file named") {
  ScratchDir dir;
  CHECK_THROWS_WITH(read_bounded(dir.path.string(), kHostfile), Contains("is a directory"));
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(read_bounded(dir / "fifo", kKey),
                    "etcd key file '" + (dir / "fifo") +
                        "' is a FIFO; Cohort reads it only from a regular file of at most 4 MiB");
  // Where pipes are allowed, a FIFO nobody writes to reads as empty at once, never a hang.
  auto start = std::chrono::steady_clock::now();
  CHECK(read_bounded(dir / "fifo", kHostfile).empty());
  CHECK(std::chrono::steady_clock::now() - start < 1s);
  CHECK_THROWS_WITH(read_bounded(dir / "absent", kHostfile),
                    "cannot read hostfile '" + (dir / "absent") + "': No such file or directory");
}

TEST_CASE("a pipe is read to its end and an endless one is cut at the cap") {
  {
    Pipe pipe;
    REQUIRE(::write(pipe.fds[1], "node1\n", 6) == 6);
    pipe.close_writer();
    CHECK(read_bounded(pipe.path(), kHostfile) == "node1\n");
  }
  Pipe endless;
  std::thread writer([fd = endless.fds[1]] {
    std::string zeros(65536, '\0');
    while (::write(fd, zeros.data(), zeros.size()) > 0) {
    }
  });
  CHECK_THROWS_WITH(
      read_bounded(endless.path(), kHostfile),
      "hostfile '" + endless.path() + "' holds more than the 1 MiB Cohort reads of it");
  ::close(endless.fds[0]);  // the writer's next write fails (EPIPE) and it stops
  endless.fds[0] = -1;
  writer.join();
}

TEST_CASE("a pipe whose writer does not finish fails after the rule's timeout") {
  Pipe pipe;
  REQUIRE(::write(pipe.fds[1], "node1\n", 6) == 6);  // and the writer stays open
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(
      read_bounded(pipe.path(), kHostfile),
      "hostfile '" + pipe.path() + "': its writer did not finish within 2000 ms (6 bytes read)");
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 2000ms);
  CHECK(took < 4000ms);
}

TEST_CASE("open_regular opens a regular file by its own name only") {
  ScratchDir dir;
  write_text(dir / "ckpt", "12345");
  fs::create_symlink(dir / "ckpt", dir / "link");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  fs::create_directory(dir / "sub");
  Directory d = Directory::open(dir.path.string(), Directory::Create::kNo);
  CHECK(open_regular(d, "ckpt").size == 5);
  CHECK_THROWS_WITH(open_regular(d, "link"),
                    "'" + (dir / "link") + "' is a symbolic link, not a regular file");
  CHECK_THROWS_WITH(open_regular(d, "fifo"),
                    "'" + (dir / "fifo") + "' is a FIFO, not a regular file");
  CHECK_THROWS_WITH(open_regular(d, "sub"),
                    "'" + (dir / "sub") + "' is a directory, not a regular file");
  Directory dev = Directory::open("/dev", Directory::Create::kNo);
  CHECK_THROWS_WITH(open_regular(dev, "zero"),
                    "'/dev/zero' is a character device, not a regular file");
  CHECK_THROWS_WITH(open_regular(d, "absent"), Contains("No such file or directory"));
}

TEST_CASE("size_text names caps in MiB KiB or bytes") {
  CHECK(size_text(1 << 20) == "1 MiB");
  CHECK(size_text(4 << 20) == "4 MiB");
  CHECK(size_text(64 << 10) == "64 KiB");
  CHECK(size_text(1000) == "1000 bytes");
}
