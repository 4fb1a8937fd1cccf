#include "elastic_job/round_board.h"

#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::discovery {

std::optional<rendezvous::CheckIn> RoundBoard::checkin(int id, int entry, const std::string& who) {
  auto text = store_.lookup(rendezvous::checkin_key(std::to_string(id), entry));
  if (!text) return std::nullopt;
  try {
    return rendezvous::parse_checkin(*text);
  } catch (const InvalidArgument& e) {
    log::warning(who, " sent a check-in cohortrun does not understand (", e.what(),
                 "); taking it for a failed collective");
    return rendezvous::CheckIn{rendezvous::CheckIn::Kind::kFailed, "unreadable check-in"};
  }
}

void RoundBoard::assign(int id, int entry, const rendezvous::Assignment& assignment) {
  store_.set(rendezvous::assign_key(std::to_string(id), entry),
             rendezvous::format_assignment(assignment));
}

void RoundBoard::tell_exit(int id, int entry) {
  assign(id, entry, {.exit = true});
}

void RoundBoard::notice(int generation) {
  store_.set(rendezvous::notice_key(generation), "");
}

void RoundBoard::abandon(int round, const std::string& why) {
  store_.set(rendezvous::abandon_key(round), why);
}

std::optional<std::string> RoundBoard::progress() {
  return store_.lookup(rendezvous::progress_key());
}

std::optional<std::string> RoundBoard::reset_report(int id, int entry) {
  return store_.lookup(rendezvous::reset_report_key(std::to_string(id), entry));
}

std::unique_ptr<rendezvous::RendezvousServer> start_elastic_server(
    RendezvousEndpoint& endpoint, std::chrono::milliseconds max_get_wait, ElasticInbox& inbox) {
  ElasticInbox* filed = &inbox;
  rendezvous::RendezvousServerOptions options{
      .max_get_wait = max_get_wait,
      .on_set = [filed](const std::string& scope, const std::string& key) {
        if (scope == rendezvous::kElasticScope) filed->file(key);
      }};
  auto server =
      std::make_unique<rendezvous::RendezvousServer>(endpoint.addr, endpoint.secret, options);
  endpoint.port = server->port();
  return server;
}

const char* kind_word(rendezvous::CheckIn::Kind kind) {
  switch (kind) {
    case rendezvous::CheckIn::Kind::kStart:
      return "started";
    case rendezvous::CheckIn::Kind::kFailed:
      return "a collective failed";
    case rendezvous::CheckIn::Kind::kInterrupted:
      return "interrupted";
    case rendezvous::CheckIn::Kind::kDrained:
      return "drained";
  }
  return "?";
}

}  // namespace cohort::discovery
