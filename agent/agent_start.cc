// How an agent joins its job (docs/agents.md, "Starting a job"): a lease, the job's id
// (agent_job_id.h) and its node's name (agent_name.h) claimed, the job read once. Every request
// of it ends at once on a stop signal (StopInterrupt): an agent told to stop while it waits for
// etcd at start exits with the signal's status, not when the request's deadline comes.
#include <csignal>
#include <cstring>
#include <map>
#include <string>

#include "agent/agent.h"
#include "agent/agent_job_id.h"
#include "agent/agent_name.h"
#include "base/log.h"
#include "cohort/errors.h"
#include "elastic_policy/node_round_plan.h"
#include "launcher/job_report.h"

namespace cohort::discovery {

void Agent::start() {
  // Said first: while etcd does not answer, this is what the agent waits for.
  announce("agent for node " + options_.node + " of job " + options_.job_id + " on " +
           store_.describe());
  try {
    lease_ = grant_lease();
  } catch (const rendezvous::EtcdInterrupted&) {
    throw;
  } catch (const Error& e) {
    throw Error("agent for node '" + options_.node + "' of job '" + options_.job_id +
                "' cannot start: " + e.what());
  }
  claim_job_id(store_, options_);  // first: nothing is written for a job of another secret
  claim_node_name(store_, options_, lease_->id());
  events_.job_start(options_);
  std::map<std::string, std::string> startup;  // once: what its node's earlier agents left
  read_all("", &startup);
  slot_spawns_ = first_spawns(startup, options_.node);
  auto first = parse_agent_snapshot(startup);
  if (first.view.last_round &&
      (first.view.last_round->stop || elastic_policy::node_job_done(first.view))) {
    throw Error("job '" + options_.job_id + "' already ended in etcd (round " +
                std::to_string(first.view.last_round_number) + "): give a new job a new --rdzv-id");
  }
}

// Nothing was started, so nothing is stopped or told but the lease's revocation, if a lease was
// granted: given kStopBudget, unanswered the lease (and the node's name, if claimed) expires within
// its TTL.
int Agent::stopped_at_start() {
  auto signals = read_job_signals(signals_.get(), workers_);
  if (signals.empty()) {
    throw Error("agent: a request to etcd was interrupted with no signal pending");
  }
  int sig = signals.front();
  interrupt_.stop_within(kStopBudget);
  std::string why = std::string("received SIG") + sigabbrev_np(sig) + " while waiting for etcd";
  report(why + " at start; stopping (no worker was started)");
  events_.job_stopping(why);
  events_.job_end(128 + sig);
  return 128 + sig;
}

}  // namespace cohort::discovery
