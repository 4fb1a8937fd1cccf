// A node's name in an agent job, held in etcd under its agent's lease before any worker starts:
// workers are named after their node, and a second live agent of the same name would start
// workers that take the first one's places.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "agent/agent_options.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// Claims options.node under lease `lease`. An agent restarted after a crash waits for its
// predecessor's lease to run out (up to options.lease_ttl and a second). Throws InvalidArgument
// when another live agent holds the name.
void claim_node_name(rendezvous::EtcdStore& store, const AgentOptions& options, int64_t lease);

// Where the spawn numbers of `node`'s worker ids (agent_worker_id) start for an agent that has
// just claimed the name: slot -> one past the highest spawn number that any key or value of the
// job (`values`, as EtcdStore::list gives them) mentions for that slot. A node restarted with the
// same name (a Kubernetes pod) so never reuses a worker id of its predecessor, whose check-ins,
// assignments, exits and kills are still in etcd.
std::map<int, int> first_spawns(const std::map<std::string, std::string>& values,
                                const std::string& node);

}  // namespace cohort::discovery
