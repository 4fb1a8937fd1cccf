#include "elastic_job/round_board.h"

namespace cohort::discovery {

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
