#include "agent/agent_view.h"

#include <optional>
#include <string_view>

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
  } else if (auto rest = after(job_elastic_key("checkin/"))) {
    add_checkin(s, key, *rest, value);
  } else if (auto report = after(job_elastic_key("reset/"))) {
    add_reset(s, key, *report, value);
  } else if (key == job_elastic_key(rendezvous::progress_key())) {
    s.progress = value;
  } else if (auto g = after(job_elastic_key("notice/"))) {
    if (auto generation = whole_number(*g)) s.generation = std::max(s.generation, *generation);
  }
}

}  // namespace

std::string job_elastic_key(const std::string& elastic_key) {
  return std::string(rendezvous::kElasticScope) + "/" + elastic_key;
}

AgentSnapshot parse_agent_snapshot(const std::map<std::string, std::string>& values) {
  AgentSnapshot s;
  for (const auto& [key, value] : values) add_record(s, key, value);
  return s;
}

}  // namespace cohort::discovery
