#include "agent/agent_view.h"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/agent_records.h"
#include "base/decimal.h"
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

// The kinds of key a snapshot reads, and where each is told apart from the others: one place for
// parse_agent_snapshot and in_agent_snapshot. The elastic protocol's keys are named further by the
// launcher's side of the protocol (RoundBoard::parse_key).
enum class Kind { kNone, kJob, kLead, kNode, kPlanner, kRound, kExit, kKill, kCause, kElastic };

// The kind of `key`, and in `rest` what follows the kind's prefix.
Kind classify(std::string_view key, std::string_view& rest) {
  static const std::vector<std::pair<std::string, Kind>> kPrefixes = {
      {"agents/", Kind::kNode},
      {"planners/", Kind::kPlanner},
      {"rounds/", Kind::kRound},
      {"exits/", Kind::kExit},
      {"kills/", Kind::kKill},
      {"causes/", Kind::kCause},
      {std::string(rendezvous::kElasticScope) + "/", Kind::kElastic}};
  if (key == "job") return Kind::kJob;
  if (key == lead_key()) return Kind::kLead;
  for (const auto& [prefix, kind] : kPrefixes) {
    if (!key.starts_with(prefix) || key.size() == prefix.size()) continue;
    rest = key.substr(prefix.size());
    return kind;
  }
  return Kind::kNone;
}

void add_record(AgentSnapshot& s, const std::string& key, const std::string& value) {
  std::string_view rest;
  switch (classify(key, rest)) {
    case Kind::kNode:
      try {
        s.view.nodes[std::string(rest)] = parse_agent_node(value);
      } catch (const InvalidArgument& e) {
        refuse(key, e.what());
      }
      return;
    case Kind::kPlanner:
      if (auto r = whole_number(rest)) s.planners[*r] = value;
      return;
    case Kind::kRound:
      return add_round(s, key, rest, value);
    case Kind::kExit:
      s.exits[std::string(rest)] = value;
      if (value == "0") s.view.finished.insert(std::string(rest));
      return;
    case Kind::kKill:
      s.kills[std::string(rest)] = value;
      return;
    case Kind::kCause:
      if (auto r = whole_number(rest)) s.causes[*r] = value;
      return;
    case Kind::kElastic:
      return add_elastic(s, key, rest, value);
    case Kind::kLead:
      s.lead = value;
      return;
    case Kind::kJob:  // read by the agent itself (agent_job_id.h, Agent::keep_round)
    case Kind::kNone:
      return;
  }
}

}  // namespace

bool in_agent_snapshot(std::string_view key) {
  std::string_view rest;
  Kind kind = classify(key, rest);
  if (kind != Kind::kElastic) return kind != Kind::kNone;
  try {
    auto k = RoundBoard::parse_key(rest);
    // The agents write the assignments and abandons, and read them from the rounds.
    return k && k->kind != BoardKey::Kind::kAssignment && k->kind != BoardKey::Kind::kAbandon;
  } catch (const InvalidArgument&) {
    return true;  // a malformed protocol key: the snapshot refuses it, with its warning
  }
}

AgentSnapshot parse_agent_snapshot(const std::map<std::string, std::string>& values) {
  AgentSnapshot s;
  for (const auto& [key, value] : values) add_record(s, key, value);
  return s;
}

}  // namespace cohort::discovery
