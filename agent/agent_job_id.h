// The job's marker in etcd (the key "job" under /cohort/<id>/), which tells an agent at once
// whether --rdzv-id is free for its secret: sealed "running" by the job's first agent, "ended" by
// the agents that see the job end. Every other key of a job that another secret sealed is merely
// refused, so without the marker an agent with the wrong secret (a re-run, or a second job given
// the same id) would wait out --elastic-timeout for nodes that never come.
//
// The marker can be deleted or overwritten by anyone who can write to etcd. So the job's agents
// set it again whenever they find it missing or not sealed by their secret, and an agent that does
// not find its own job's marker decides from the keys that prove a job holds the id: the names of
// its live agents (names/<node>, each under its agent's lease) and its rounds (rounds/<r>, never
// deleted while it runs). The running job keeps the id: an agent of another secret that comes
// while the marker is gone finds the running job's names or rounds and is refused before it
// writes anything, and the running job's agents put their marker back over whatever is there.
#pragma once

#include "agent/agent_options.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// Claims options.job_id for options.secret before the agent writes anything else. Joins the job
// when this secret sealed "running" at the marker; when the marker is missing or another's, joins
// (setting the marker again) if this secret sealed a live agent's name or a round, and sets it if
// there are none of any job's. Throws InvalidArgument naming the id when its job ended, or when
// another secret (or a writer without any) holds the id: bytes at the marker that this secret did
// not seal, or values under names/ or rounds/ that another secret sealed, and none that it did.
void claim_job_id(rendezvous::EtcdStore& store, const AgentOptions& options);

// Sets the marker "running" where it is missing or holds bytes this secret did not seal, with a
// compare-and-set on their revision; leaves a marker this secret sealed as it is. What a running
// job's agents do whenever they do not find their marker in etcd.
void keep_job_marker(rendezvous::EtcdStore& store);

// Marks the job ended, so that an agent started later with its id is refused whatever its secret.
// Best effort: logs when etcd cannot be reached.
void mark_job_ended(rendezvous::EtcdStore& store);

}  // namespace cohort::discovery
