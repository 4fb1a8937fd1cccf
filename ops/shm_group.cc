#include "ops/shm_group.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <ctime>

#include "base/cpu_relax.h"
#include "base/deadline.h"
#include "cohort/errors.h"

namespace cohort::ops {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kLine = 64;
constexpr size_t kReasonBytes = 256;
// How often a waiter looks again before it sleeps: about as long as a peer takes to reach the
// barrier when it is already on its way (tens of microseconds), short enough not to hold a core
// that an oversubscribed peer needs.
constexpr int kSpins = 2000;

size_t round_up(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}

// The segment begins with the control block: the futex word, the abort word, one cache line per
// member for its arrivals, and one reason per member.
size_t control_bytes(int size) {
  return round_up(2 * kLine + size * (kLine + kReasonBytes), kPage);
}

// A futex shared between processes (not FUTEX_PRIVATE): sleeps while *word == expected, at most
// `timeout`; woken by futex_wake on the same address from any process mapping it.
void futex_wait(uint32_t* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  timespec relative{static_cast<time_t>(timeout.count() / 1'000'000'000),
                    static_cast<long>(timeout.count() % 1'000'000'000)};
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &relative, nullptr, 0);
}

void futex_wake(uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct ShmGroup::Control {
  alignas(kLine) uint32_t wake;     // bumped by every barrier's last arrival
  uint32_t sleepers;                // waiters in futex_wait on `wake`
  alignas(kLine) uint32_t aborted;  // 0, or the first member to abort + 1

  uint64_t& arrivals(int member) {
    return *reinterpret_cast<uint64_t*>(reinterpret_cast<std::byte*>(this) + 2 * kLine +
                                        member * kLine);
  }
  char* reason(int member, int size) {
    return reinterpret_cast<char*>(this) + 2 * kLine + size * kLine + member * kReasonBytes;
  }
};

size_t ShmGroup::segment_bytes(int size, size_t slot_bytes) {
  return control_bytes(size) + 2 * (size + 1) * slot_bytes;
}

ShmGroup::ShmGroup(ShmSegment segment, int rank, std::vector<int> names, size_t slot_bytes,
                   std::chrono::milliseconds timeout)
    : segment_(std::move(segment)),
      control_(reinterpret_cast<Control*>(segment_.data())),
      rank_(rank),
      size_(static_cast<int>(names.size())),
      names_(std::move(names)),
      slot_bytes_(slot_bytes),
      timeout_(timeout),
      banks_(segment_.data() + control_bytes(size_)) {
  if (slot_bytes % kPage != 0 || segment_.size() < segment_bytes(size_, slot_bytes)) {
    throw InternalError("shared memory: the segment is smaller than its layout needs");
  }
}

ShmGroup::Bank ShmGroup::next_bank() {
  bank_ ^= 1;
  return Bank(banks_ + bank_ * (size_ + 1) * slot_bytes_, size_, slot_bytes_);
}

bool ShmGroup::all_arrived() const {
  for (int member = 0; member < size_; ++member) {
    if (std::atomic_ref(control_->arrivals(member)).load() < arrivals_) return false;
  }
  return true;
}

void ShmGroup::wake_all() {
  std::atomic_ref(control_->wake).fetch_add(1);
  // Seen as zero only if every waiter will find `wake` changed before it sleeps.
  if (std::atomic_ref(control_->sleepers).load() != 0) futex_wake(&control_->wake);
}

void ShmGroup::barrier(std::string_view what) {
  throw_if_aborted();
  ++arrivals_;
  std::atomic_ref(control_->arrivals(rank_)).store(arrivals_);
  if (all_arrived()) {
    wake_all();
    return;
  }
  if (spin_policy_.should_spin()) {
    for (int spin = 0; spin < kSpins; ++spin) {
      if (all_arrived()) {
        spin_policy_.spun(true);
        return;
      }
      cpu_relax();
    }
    spin_policy_.spun(false);
  }
  auto deadline = SteadyClock::now() + timeout_;
  for (;;) {
    uint32_t seen = std::atomic_ref(control_->wake).load();
    if (all_arrived()) return;
    throw_if_aborted();
    auto now = SteadyClock::now();
    if (now >= deadline) time_out(what);
    std::atomic_ref(control_->sleepers).fetch_add(1);
    futex_wait(&control_->wake, seen, deadline - now);
    std::atomic_ref(control_->sleepers).fetch_sub(1);
  }
}

void ShmGroup::abort(const std::string& reason) {
  if (aborted_here_.exchange(true)) return;
  char* mine = control_->reason(rank_, size_);
  size_t length = std::min(reason.size(), kReasonBytes - 1);
  std::memcpy(mine, reason.data(), length);
  mine[length] = '\0';
  uint32_t none = 0;
  std::atomic_ref(control_->aborted).compare_exchange_strong(none, rank_ + 1);
  wake_all();
}

void ShmGroup::throw_if_aborted() const {
  uint32_t first = std::atomic_ref(control_->aborted).load();
  if (first == 0) return;
  int member = static_cast<int>(first) - 1;
  std::string reason = control_->reason(member, size_);
  if (member == rank_) throw InternalError(reason);
  throw InternalError("shared memory: rank " + std::to_string(names_[member]) +
                      " failed: " + reason);
}

void ShmGroup::time_out(std::string_view what) const {
  std::string missing;
  for (int member = 0; member < size_; ++member) {
    if (std::atomic_ref(control_->arrivals(member)).load() >= arrivals_) continue;
    missing += (missing.empty() ? "" : ", ") + std::to_string(names_[member]);
  }
  throw InternalError("shared memory " + std::string(what) + ": rank(s) " + missing +
                      " did not arrive within " + std::to_string(timeout_.count()) + " ms");
}

}  // namespace cohort::ops
