// The elastic job's rendezvous server and how a check-in reads in its log. The launcher's side of
// the elastic protocol over that server's store, which agent mode shares, is RoundBoard
// (launcher/round_board.h).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "elastic_job/elastic_inbox.h"
#include "launcher/round_board.h"
#include "launcher/worker_env.h"
#include "rendezvous/server.h"
#include "rendezvous/worker_reports.h"

#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"

namespace cohort::discovery {

// The elastic launcher's rendezvous server on `endpoint` (its port is filled in): its GETs wait
// up to `max_get_wait`, and every worker's check-in or report is filed in `inbox`, which must
// outlive it.
std::unique_ptr<rendezvous::RendezvousServer> start_elastic_server(
    RendezvousEndpoint& endpoint, std::chrono::milliseconds max_get_wait, ElasticInbox& inbox);

// How a check-in's kind reads in the launcher's log.
const char* kind_word(rendezvous::CheckIn::Kind kind);

}  // namespace cohort::discovery
