// The job's marker in etcd (the key "job" under /cohort/<id>/), which tells an agent at once
// whether --rdzv-id is free for its secret: sealed "running" by the job's first agent, "ended" by
// the agents that see the job end. Every other key of a job that another secret sealed is merely
// refused, so without the marker an agent with the wrong secret (a re-run, or a second job given
// the same id) would wait out --elastic-timeout for nodes that never come.
#pragma once

#include "agent/agent_job.h"
#include "rendezvous/etcd_store.h"

namespace cohort::discovery {

// Claims options.job_id for options.secret before the agent writes anything: sets the marker if
// it is unset, and joins the job if this secret sealed "running" there. Throws InvalidArgument
// naming the id when its job ended, or when any other bytes are there (another secret's job,
// running or ended, or bytes written without any job's secret).
void claim_job_id(rendezvous::EtcdStore& store, const AgentOptions& options);

// Marks the job ended, so that an agent started later with its id is refused whatever its secret.
// Best effort: logs when etcd cannot be reached.
void mark_job_ended(rendezvous::EtcdStore& store);

}  // namespace cohort::discovery
