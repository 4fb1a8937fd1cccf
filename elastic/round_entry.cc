#include "elastic/round_entry.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/log.h"
#include "core/elastic_join.h"
#include "core/fault_injection.h"
#include "core/job_store.h"
#include "elastic/round_watch.h"
#include "elastic/session.h"
#include "rendezvous/protocol.h"

namespace cohort::elastic::detail {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
}

rendezvous::Assignment await_assignment(const Config& config, rendezvous::Store& launcher,
                                        int entry, const rendezvous::CheckIn& checkin) {
  std::string key = rendezvous::assign_key(config.worker_id, entry);
  try {
    log::debug("elastic worker '", config.worker_id, "': checking in as entry ", entry);
    launcher.set(rendezvous::checkin_key(config.worker_id, entry),
                 rendezvous::format_checkin(checkin));
    log::debug("elastic worker '", config.worker_id, "': checked in as entry ", entry);
    return rendezvous::parse_assignment(launcher.get(key, config.elastic_timeout));
  } catch (const rendezvous::RendezvousTimeout& e) {
    throw InternalError("elastic worker '" + config.worker_id + "': no assignment '" + key +
                        "' from the launcher (" + launcher.describe() + ") within " +
                        std::to_string(config.elastic_timeout.count() / 1000.0) +
                        " s (COHORT_ELASTIC_TIMEOUT_SECONDS): " + e.what());
  } catch (const InvalidArgument& e) {
    throw InternalError("elastic worker '" + config.worker_id + "': the launcher (" +
                        launcher.describe() + ") sent a malformed assignment for '" + key +
                        "': " + e.what());
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    throw InternalError("elastic worker '" + config.worker_id + "': checking in as entry " +
                        std::to_string(entry) + " failed: " + e.what());
  }
}

[[noreturn]] void leave_job(const Config& config, int entry) {
  log::info("elastic worker '", config.worker_id, "': the launcher assigned 'exit' for entry ",
            entry, "; leaving the job");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::exit(0);
}

// `config` with the rank, size, local and cross placement of `a`.
Config placed(Config config, const rendezvous::Assignment& a) {
  config.placement = a.placement;
  config.hosts_placed = true;
  return config;
}

// The last round entry this process entered (-1: none yet). A process's entries go on across
// shutdown() and init(): the launcher expects a worker's next check-in at the entry after its last.
std::atomic<int> g_last_entry{-1};

// Short requests for the host-notice check on etcd (Session::notices).
constexpr std::chrono::seconds kNoticeRequestTimeout{2};

void attach_notice_store(const Config& config, Session& session) {
  session.notices = session.launcher;
  if (config.etcd_endpoints.empty()) return;
  Config brief = config;
  brief.timeout = std::min<std::chrono::milliseconds>(config.timeout, kNoticeRequestTimeout);
  session.notices = open_job_store(brief, rendezvous::kElasticScope);
  session.outage_limit = config.elastic_timeout;
}

}  // namespace

std::shared_ptr<rendezvous::Store> connect_launcher(const Config& config) {
  return open_job_store(config, rendezvous::kElasticScope);
}

std::shared_ptr<Runtime> enter_round(const Config& config,
                                     std::shared_ptr<rendezvous::Store> launcher, int entry,
                                     rendezvous::CheckIn checkin, EntryTimings& timings) {
  for (;; ++entry) {
    auto asked = Clock::now();
    maybe_inject_fault(config.fault_kill_at, config.worker_id, "checkin", entry);
    rendezvous::Assignment assignment = await_assignment(config, *launcher, entry, checkin);
    timings.assignment += since(asked);
    if (assignment.exit) leave_job(config, entry);
    maybe_inject_fault(config.fault_kill_at, config.worker_id, "assignment", entry);
    auto connecting = Clock::now();
    try {
      // A round of one waits for nobody; a larger one may be abandoned while it forms.
      std::optional<RoundWatch> watch;
      if (assignment.placement.size > 1) watch.emplace(config, assignment.round);
      auto runtime = std::make_shared<Runtime>(
          placed(config, assignment),
          Formation{.rendezvous_scope = rendezvous::round_scope(assignment.round),
                    .entry = entry,
                    .cancel = watch ? &watch->abandoned() : nullptr});
      auto session = std::make_shared<Session>();
      session->launcher = launcher;
      attach_notice_store(config, *session);
      session->entry = entry;
      session->assignment = assignment;
      runtime->attach(std::move(session));
      timings.connect += since(connecting);
      g_last_entry.store(entry);
      return runtime;
    } catch (const InternalError& e) {
      timings.connect += since(connecting);
      log::warning("elastic worker '", config.worker_id, "': joining round ", assignment.round,
                   " failed (", e.what(), "); checking in again");
      checkin = {rendezvous::CheckIn::Kind::kFailed, e.what()};
    }
  }
}

}  // namespace cohort::elastic::detail

namespace cohort::detail {

std::shared_ptr<Runtime> join_elastic_job(const Config& config, int generation) {
  using rendezvous::CheckIn;
  elastic::detail::EntryTimings timings;
  int last = elastic::detail::g_last_entry.load();
  // After a shutdown(), every worker of the round comes back as from an interrupt.
  CheckIn checkin = generation == 0 || last < 0
                        ? CheckIn{CheckIn::Kind::kStart, ""}
                        : CheckIn{CheckIn::Kind::kInterrupted, "init() after shutdown()"};
  return elastic::detail::enter_round(config, elastic::detail::connect_launcher(config), last + 1,
                                      checkin, timings);
}

}  // namespace cohort::detail
