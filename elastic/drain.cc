#include "elastic/drain.h"

#include <atomic>
#include <csignal>

#include "cohort/elastic/run.h"

namespace cohort::elastic {
namespace {

// Signals belong to the process, not to a Runtime: a handler has nowhere else to leave its
// word, and a drain asked for must outlive the reset that tears the Runtime down. So this is
// the one process-wide flag of the worker side.
std::atomic<int> g_drain_requests{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigterm(int) {
  if (g_drain_requests.fetch_add(1) > 0) {  // the second SIGTERM: give up the drain
    std::signal(SIGTERM, SIG_DFL);
    std::raise(SIGTERM);
  }
}

}  // namespace

void request_drain() {
  g_drain_requests.fetch_add(1);
}

bool drain_requested() {
  return g_drain_requests.load() > 0;
}

namespace detail {

void install_drain_handler() {
  struct sigaction current {};
  sigaction(SIGTERM, nullptr, &current);
  // The program's own SIGTERM handler stays: it can call request_drain() itself.
  bool ours = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == on_sigterm;
  if (!ours && ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL)) return;
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace detail
}  // namespace cohort::elastic
