#include "agent/agent_view.h"

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.h"
#include "cohort/errors.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"

namespace cohort::discovery {
namespace {

void refuse(const std::string& key, const std::string& why) {
  // One rate limit for the class (base/log.h), not per key: keys are whoever wrote them.
  log::limited_burst(log::Level::kWarning, "agent-record", 4, "agent: ignoring the record ", key,
                     ": ", why);
}

// "elastic/checkin/<worker>/<entry>": the worker and entry, and whether it drained.
void add_checkin(AgentSnapshot& s, const std::string& key, std::string_view rest,
                 const std::string& value) {
  size_t slash = rest.rfind('/');
  auto entry =
      slash == std::string_view::npos ? std::nullopt : whole_number(rest.substr(slash + 1));
  if (!entry) return refuse(key, "not checkin/<worker>/<entry>");
  std::string worker(rest.substr(0, slash));
  s.view.checkins[worker].insert(*entry);
  try {
    if (rendezvous::parse_checkin(value).kind == rendezvous::CheckIn::Kind::kDrained) {
      s.view.drained.insert(worker);
    }
  } catch (const InvalidArgument& e) {
    refuse(key, e.what());
  }
}

// "elastic/reset/<worker>/<entry>": a worker's reset report.
void add_reset(AgentSnapshot& s, const std::string& key, std::string_view rest,
               const std::string& value) {
  size_t slash = rest.rfind('/');
  auto entry =
      slash == std::string_view::npos ? std::nullopt : whole_number(rest.substr(slash + 1));
  if (!entry || slash == 0) return refuse(key, "not reset/<worker>/<entry>");
  s.resets[std::string(rest.substr(0, slash))][*entry] = value;
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
// parse_agent_snapshot and in_agent_snapshot.
enum class Kind {
  kNone,
  kJob,
  kNode,
  kPlanner,
  kRound,
  kExit,
  kKill,
  kCheckin,
  kReset,
  kProgress,
  kNotice
};

// The kind of `key`, and in `rest` what follows the kind's prefix.
Kind classify(std::string_view key, std::string_view& rest) {
  static const std::vector<std::pair<std::string, Kind>> kPrefixes = {
      {"agents/", Kind::kNode},
      {"planners/", Kind::kPlanner},
      {"rounds/", Kind::kRound},
      {"exits/", Kind::kExit},
      {"kills/", Kind::kKill},
      {job_elastic_key("checkin/"), Kind::kCheckin},
      {job_elastic_key("reset/"), Kind::kReset},
      {job_elastic_key("notice/"), Kind::kNotice}};
  static const std::string kProgress = job_elastic_key(rendezvous::progress_key());
  if (key == "job") return Kind::kJob;
  if (key == kProgress) return Kind::kProgress;
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
    case Kind::kCheckin:
      return add_checkin(s, key, rest, value);
    case Kind::kReset:
      return add_reset(s, key, rest, value);
    case Kind::kProgress:
      s.progress = value;
      return;
    case Kind::kNotice:
      if (auto generation = whole_number(rest)) s.generation = std::max(s.generation, *generation);
      return;
    case Kind::kJob:  // read by the agent itself (agent_job_id.h, Agent::keep_round)
    case Kind::kNone:
      return;
  }
}

}  // namespace

std::string job_elastic_key(const std::string& elastic_key) {
  return std::string(rendezvous::kElasticScope) + "/" + elastic_key;
}

bool in_agent_snapshot(std::string_view key) {
  std::string_view rest;
  return classify(key, rest) != Kind::kNone;
}

AgentSnapshot parse_agent_snapshot(const std::map<std::string, std::string>& values) {
  AgentSnapshot s;
  for (const auto& [key, value] : values) add_record(s, key, value);
  return s;
}

}  // namespace cohort::discovery
