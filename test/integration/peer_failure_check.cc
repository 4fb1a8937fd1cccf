// Worker for the failure-detection tests (peer_failure.sh): every rank loops over allreduces of
// FLOATS float32 elements. Once training runs it writes "ready RANK PID" to REPORT (a FIFO the script reads);
// the script then freezes or kills one rank. A survivor that gets an InternalError writes
// "caught RANK UNIX_NS MESSAGE" there (the time taken on the realtime clock, as the script's) and
// exits 0. SIGTERM from the launcher is ignored, so its clean-up cannot hide how a survivor ends.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cohort/cohort.h"

namespace {

// One write(2) of at most PIPE_BUF bytes, so lines from different ranks never interleave.
void report(const char* fifo, std::string line) {
  if (line.size() > 4000) line.resize(4000);
  std::replace(line.begin(), line.end(), '\n', ' ');
  line += '\n';
  int fd = ::open(fifo, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::cerr << "cannot report to " << fifo << std::endl;
    std::exit(4);
  }
  ::close(fd);
}

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: peer_failure_check REPORT_FIFO FLOATS" << std::endl;
    return 2;
  }
  const char* fifo = argv[1];
  size_t floats = std::strtoull(argv[2], nullptr, 10);
  std::signal(SIGTERM, SIG_IGN);
  cohort::init();
  int rank = cohort::rank();
  std::vector<float> gradient(floats, 1.0f);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  try {
    for (int step = 0; std::chrono::steady_clock::now() < deadline; ++step) {
      if (step == 10)
        report(fifo, "ready " + std::to_string(rank) + " " + std::to_string(getpid()));
      cohort::allreduce("gradient", cohort::Tensor::of(gradient));
    }
  } catch (const cohort::InternalError& e) {
    report(fifo,
           "caught " + std::to_string(rank) + " " + std::to_string(unix_ns()) + " " + e.what());
    cohort::shutdown();
    return 0;
  }
  std::cerr << "rank " << rank << " trained 60 s without an error" << std::endl;
  return 3;
}
