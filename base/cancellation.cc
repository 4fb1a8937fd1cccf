#include "base/cancellation.h"

#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>

#include "cohort/errors.h"

namespace cohort {

Cancellation::Cancellation() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!fd_.valid()) throw Error(std::string("eventfd: ") + std::strerror(errno));
}

void Cancellation::cancel(const std::string& reason) {
  MutexLock lock(mutex_);
  if (cancelled()) return;
  reason_ = reason;
  cancelled_.store(true, std::memory_order_release);
  // Never read back: the counter stays non-zero, so every later poll sees it at once.
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof one);
  for (auto& [id, hook] : hooks_) hook(reason_);
  hooks_.clear();
}

int Cancellation::add_hook(Hook hook) const {
  MutexLock lock(mutex_);
  if (cancelled()) {
    hook(reason_);
    return -1;
  }
  int id = next_hook_++;
  hooks_.emplace(id, std::move(hook));
  return id;
}

void Cancellation::remove_hook(int id) const {
  MutexLock lock(mutex_);
  hooks_.erase(id);
}

std::string Cancellation::reason() const {
  MutexLock lock(mutex_);
  return reason_;
}

void Cancellation::throw_if_cancelled() const {
  if (cancelled()) throw InternalError(reason());
}

}  // namespace cohort
