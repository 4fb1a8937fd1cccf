#include "base/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort {
namespace {

std::string limit_text(rlim_t limit) {
  return limit == RLIM_INFINITY ? "unlimited" : std::to_string(limit);
}

}  // namespace

size_t open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;  // no /proc: the limit alone is checked
  size_t count = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count > 0 ? count - 1 : 0;  // less the directory's own descriptor
}

unsigned long raise_soft_descriptor_limit(unsigned long total) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= total) return limit.rlim_cur;
  rlim_t soft = limit.rlim_max == RLIM_INFINITY ? total : std::min<rlim_t>(total, limit.rlim_max);
  if (soft <= limit.rlim_cur) return limit.rlim_cur;
  rlimit raised{soft, limit.rlim_max};
  return ::setrlimit(RLIMIT_NOFILE, &raised) == 0 ? soft : limit.rlim_cur;
}

void reserve_descriptors(size_t more, const std::string& what) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  size_t open = open_descriptors();
  rlim_t need = static_cast<rlim_t>(open + more);
  if (limit.rlim_cur == RLIM_INFINITY || need <= limit.rlim_cur) return;
  if (limit.rlim_max != RLIM_INFINITY && need > limit.rlim_max) {
    throw InvalidArgument(what + " need " + std::to_string(more) + " file descriptors beside the " +
                          std::to_string(open) + " open, but RLIMIT_NOFILE allows " +
                          limit_text(limit.rlim_max) + " (hard limit; raise it with ulimit -Hn " +
                          std::to_string(need) + " or in /etc/security/limits.conf)");
  }
  rlim_t soft = limit.rlim_cur;
  if (raise_soft_descriptor_limit(limit.rlim_max) != limit.rlim_max) {
    throw InvalidArgument(what + " need " + std::to_string(more) + " file descriptors beside the " +
                          std::to_string(open) + " open, and raising RLIMIT_NOFILE from " +
                          limit_text(soft) + " to " + limit_text(limit.rlim_max) +
                          " failed: " + std::strerror(errno));
  }
  log::info("raised the soft RLIMIT_NOFILE from ", limit_text(soft), " to ",
            limit_text(limit.rlim_max), ": ", what, " need ", more, " descriptors beside the ",
            open, " open");
}

}  // namespace cohort
