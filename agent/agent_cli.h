// The parts of cohortrun's agent-mode configuration that CLI11 cannot check by itself: --nnodes,
// the job id, the job secret from COHORT_SECRET, the default --node-address, and the test-only
// COHORT_FAULT_AGENT_KILL_AT and its fault. Each throws InvalidArgument naming the flag or
// variable.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "agent/agent_options.h"

namespace cohort::discovery {

// --nnodes N (MIN = MAX = N) or MIN:MAX. An error starts with `who` (the variable or flag and
// its value; default "--nnodes: 'TEXT'").
std::pair<int, int> parse_nnodes(const std::string& text, const std::string& who = "");

// A job id (--rdzv-id, PET_RDZV_ID): letters, digits, '.', '_' and '-', at least one. It names
// the job's keys, /cohort/ID/.
bool valid_job_id(std::string_view id);

// COHORT_SECRET's value (hex) as the raw secret; `hex` is null when the variable is unset.
std::string agent_secret(const char* hex);

// Where this node's workers listen unless told: the address this machine reaches `endpoint`
// (etcd) from, which the other nodes can reach too wherever they reach etcd.
std::string default_node_address(const std::string& endpoint);

// COHORT_FAULT_AGENT_KILL_AT=ROUND:MARKER_FILE.
AgentOptions::KillWhenPlanning parse_agent_fault(const std::string& text);
// SIGKILLs this agent if `options` asks for it at the planning of `round` and it is the first to
// get there (it creates the marker file).
void maybe_die_planning(const AgentOptions& options, int round);

}  // namespace cohort::discovery
