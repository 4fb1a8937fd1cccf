// The records through which cohortrun's agents (one per node, docs/agents.md once written) run a
// job on etcd with no process in charge, beside the workers' elastic protocol
// (rendezvous/elastic_protocol.h). Keys, relative to the job's prefix "/cohort/<job>/":
//
//   job             the job's marker: "running" or "ended" (agent_job_id.h)
//   names/<node>    under the agent's lease: the node's name is taken (its agent's pid)
//   agents/<node>   under the agent's lease: its slots and the workers it runs (AgentNode)
//   lead            under the lease of the agent that plans the job's rounds: its node. The
//                   first agent to find it unset takes it (agent_ranges.h); only that agent
//                   reads every key, the others their own records and the rounds
//   planners/<r>    under the lease of the agent that won the right to plan round r
//   rounds/<r>      written once, by r's planner: the members in rank order (AgentRound)
//   exits/<worker>  a worker's exit status, written by its agent
//   kills/<worker>  why the planner gave up on a worker; its agent SIGKILLs it
//   causes/<r>      written once, by r's planner before rounds/<r>: the round's cause, as it
//                   named it ("<cause> <reason>"), which every agent's round event names
//
// Values are sealed with the job secret by the store, like every other value; these functions
// only give them a shape, and refuse text that does not have it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elastic_policy/node_round_plan.h"

namespace cohort::discovery {

std::string name_key(std::string_view node);
std::string agent_key(std::string_view node);
std::string planner_key(int round);
std::string round_key(int round);
std::string exit_key(std::string_view worker);
std::string kill_key(std::string_view worker);
std::string cause_key(int round);
std::string lead_key();

// The shapes of agents/<node> and rounds/<r>: the elastic policy's, which decides on them.
using AgentNode = elastic_policy::NodeOffer;
using AgentMember = elastic_policy::NodeMember;
using AgentRound = elastic_policy::NodeRound;

// "slots=2 workers=n1.0.0,n1.1.0" ("workers=" with none).
std::string format_agent_node(const AgentNode& node);
// Throws InvalidArgument naming what is wrong.
AgentNode parse_agent_node(std::string_view text);

// "generation=2\n<worker> <node> <entry>\n..." (one line per rank), or "stop <reason>".
std::string format_agent_round(const AgentRound& round);
// Throws InvalidArgument naming what is wrong: a malformed line, a worker listed twice, no member.
AgentRound parse_agent_round(std::string_view text);

// A worker's id on `node`'s slot `slot`, its `spawn`-th start there: "<node>.<slot>.<spawn>",
// with every character of `node` outside A-Z a-z 0-9 . _ : - replaced by '_' (worker ids name
// keys and must be short words, core/config.cc).
std::string agent_worker_id(std::string_view node, int slot, int spawn);

}  // namespace cohort::discovery
