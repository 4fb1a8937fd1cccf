// The launcher's side of the elastic protocol (rendezvous/elastic_protocol.h), over the job's
// Store: it reads the workers' check-ins and writes their assignments, the host notices and the
// abandoned rounds. The launcher decides; this is where its decisions meet the keys.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "elastic_job/elastic_inbox.h"
#include "launcher/worker_env.h"
#include "rendezvous/server.h"
#include "rendezvous/worker_reports.h"

#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"

namespace cohort::discovery {

class RoundBoard {
 public:
  // `store` (the elastic scope) must outlive the board.
  explicit RoundBoard(rendezvous::Store& store) : store_(store) {}

  // Worker `id`'s check-in for `entry`, once it made one. One that cannot be read is logged
  // (naming `who`) and taken for a failed collective: the worker is alive and left its round.
  std::optional<rendezvous::CheckIn> checkin(int id, int entry, const std::string& who);
  // Worker `id`'s answer for `entry`: a place in a round, or "exit".
  void assign(int id, int entry, const rendezvous::Assignment& assignment);
  void tell_exit(int id, int entry);
  // Host notice `generation`: members polling at their commits learn the hosts changed.
  void notice(int generation);
  // Ends the waits of members still joining `round` (their round watch), with `why`.
  void abandon(int round, const std::string& why);
  // The texts of the workers' reports (rendezvous/worker_reports.h), once made; the launcher's
  // WorkerReportLog (launcher/worker_report_log.h) reads them.
  std::optional<std::string> progress();
  std::optional<std::string> reset_report(int id, int entry);

 private:
  rendezvous::Store& store_;
};

// The elastic launcher's rendezvous server on `endpoint` (its port is filled in): its GETs wait
// up to `max_get_wait`, and every worker's check-in or report is filed in `inbox`, which must
// outlive it.
std::unique_ptr<rendezvous::RendezvousServer> start_elastic_server(
    RendezvousEndpoint& endpoint, std::chrono::milliseconds max_get_wait, ElasticInbox& inbox);

// How a check-in's kind reads in the launcher's log.
const char* kind_word(rendezvous::CheckIn::Kind kind);

}  // namespace cohort::discovery
