// A node's name in an agent job, held in etcd under its agent's lease before any worker starts:
// workers are named after their node, and a second live agent of the same name would start
// workers that take the first one's places.
#pragma once

#include <cstdint>

#include "discovery/agent_job.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// Claims options.node under lease `lease`. An agent restarted after a crash waits for its
// predecessor's lease to run out (up to options.lease_ttl and a second). Throws InvalidArgument
// when another live agent holds the name.
void claim_node_name(rendezvous::EtcdStore& store, const AgentOptions& options, int64_t lease);

}  // namespace cohort::discovery
