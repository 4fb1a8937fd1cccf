#include "agent/agent_view.h"

#include <optional>
#include <string_view>

#include "base/log.h"
#include "cohort/errors.h"
#include "launcher/round_board.h"
#include "rendezvous/elastic_protocol.h"

namespace cohort::discovery {
namespace {

void refuse(const std::string& key, const std::string& why) {
  // One rate limit for the class (base/log.h), not per key: keys are whoever wrote them.
  log::limited_burst(log::Level::kWarning, "agent-record", 4, "agent: ignoring the record ", key,
                     ": ", why);
}

// A worker's check-in: its entry, and whether it drained.
void add_checkin(AgentSnapshot& s, const std::string& key, const BoardKey& k,
                 const std::string& value) {
  s.view.checkins[k.worker].insert(k.number);
  try {
    if (rendezvous::parse_checkin(value).kind == rendezvous::CheckIn::Kind::kDrained) {
      s.view.drained.insert(k.worker);
    }
  } catch (const InvalidArgument& e) {
    refuse(key, e.what());
  }
}

// A key of the elastic protocol ("elastic/<key>"): the workers' check-ins, reports and the host
// notices, named by the launcher's side of the protocol (launcher/round_board.h).
void add_elastic(AgentSnapshot& s, const std::string& key, std::string_view elastic_key,
                 const std::string& value) {
  std::optional<BoardKey> k;
  try {
    k = RoundBoard::parse_key(elastic_key);
  } catch (const InvalidArgument& e) {
    return refuse(key, e.what());
  }
  if (!k) return;
  switch (k->kind) {
    case BoardKey::Kind::kCheckIn:
      return add_checkin(s, key, *k, value);
    case BoardKey::Kind::kResetReport:
      s.resets[k->worker][k->number] = value;
      return;
    case BoardKey::Kind::kProgress:
      s.progress = value;
      return;
    case BoardKey::Kind::kNotice:
      s.generation = std::max(s.generation, k->number);
      return;
    case BoardKey::Kind::kAssignment:
    case BoardKey::Kind::kAbandon:
      return;  // the agents write these; they read them from the rounds
  }
}

void add_round(AgentSnapshot& s, const std::string& key, std::string_view number,
               const std::string& value) {
  auto round = whole_number(number);
  if (!round) return refuse(key, "not rounds/<number>");
  if (*round <= s.view.last_round_number) return;
  try {
    s.view.last_round = parse_agent_round(value);
    s.view.last_round_number = *round;
  } catch (const InvalidArgument& e) {
    refuse(key, e.what());
  }
}

void add_record(AgentSnapshot& s, const std::string& key, const std::string& value) {
  std::string_view k = key;
  auto after = [&](std::string_view prefix) -> std::optional<std::string_view> {
    if (!k.starts_with(prefix) || k.size() == prefix.size()) return std::nullopt;
    return k.substr(prefix.size());
  };
  if (auto node = after("agents/")) {
    try {
      s.view.nodes[std::string(*node)] = parse_agent_node(value);
    } catch (const InvalidArgument& e) {
      refuse(key, e.what());
    }
  } else if (auto round = after("planners/")) {
    if (auto r = whole_number(*round)) s.planners[*r] = value;
  } else if (auto number = after("rounds/")) {
    add_round(s, key, *number, value);
  } else if (auto worker = after("exits/")) {
    s.exits[std::string(*worker)] = value;
    if (value == "0") s.view.finished.insert(std::string(*worker));
  } else if (auto killed = after("kills/")) {
    s.kills[std::string(*killed)] = value;
  } else if (auto elastic_key = after(std::string(rendezvous::kElasticScope) + "/")) {
    add_elastic(s, key, *elastic_key, value);
  }
}

}  // namespace

AgentSnapshot parse_agent_snapshot(const std::map<std::string, std::string>& values) {
  AgentSnapshot s;
  for (const auto& [key, value] : values) add_record(s, key, value);
  return s;
}

}  // namespace cohort::discovery
