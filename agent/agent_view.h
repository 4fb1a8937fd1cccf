// What an agent reads of its job in etcd, in one range request so that every part of it is of the
// same moment: the agents' records (agent_records.h) and the workers' check-ins and host notices
// (rendezvous/elastic_protocol.h) and reports (rendezvous/worker_reports.h), all under the job's
// prefix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "agent/agent_plan.h"

namespace cohort::discovery {

struct AgentSnapshot {
  AgentJobView view;
  std::map<int, std::string> planners;       // round -> the node that claimed its planning
  std::map<std::string, std::string> exits;  // worker -> "0" or how it ended
  std::map<std::string, std::string> kills;  // worker -> why the planner gave up on it
  std::map<int, std::string> causes;         // round -> its cause, as its planner published it
  std::optional<std::string> lead;           // the node whose agent plans the rounds (lead_key)
  // Whether `view.nodes` holds every node's record: false for an agent that reads only its own
  // (agent_ranges.h), which must not take another node's missing record for a node gone.
  bool every_node = true;
  int generation = 0;  // the highest host notice set
  // The workers' reports (rendezvous/worker_reports.h): rank 0's progress, and each worker's
  // reset reports by the entry it reset into.
  std::optional<std::string> progress;
  std::map<std::string, std::map<int, std::string>> resets;
};

// The snapshot in `values` (keys relative to the job's prefix, as EtcdStore::list gives them).
// A record that does not parse is logged once and left out, as if it were not there: a value
// that passed the job's seal but not its shape is a bug to report, not a reason to stop.
AgentSnapshot parse_agent_snapshot(const std::map<std::string, std::string>& values);

// Whether a change of `key` (relative to the job's prefix) can change what an agent acts on: a key
// the snapshot reads, or the job's marker. The others (names/, the workers' assignments, their
// data plane's keys) leave every snapshot as it was, and wake no agent (Agent::refresh).
bool in_agent_snapshot(std::string_view key);

}  // namespace cohort::discovery
