#include "launcher/job_report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cohort::discovery {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own output is gone; nothing better to do
    done += static_cast<size_t>(n);
  }
}

void report(const std::string& message) {
  write_all(STDERR_FILENO, "cohortrun: " + message + "\n");
}

void announce(const std::string& message) {
  write_all(STDERR_FILENO, "[cohortrun] " + message + "\n");
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace cohort::discovery
