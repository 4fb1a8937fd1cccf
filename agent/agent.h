// The agent of agent mode (agent_job.h) as a class, shared by the files that implement it:
// agent_job.cc (its loop and the job's rounds), agent_start.cc (joining the job, and stopping on a
// signal before it did), agent_drain.cc (leaving the job gracefully) and agent_recover.cc (going
// on after etcd lost its lease, its record, its marker or the job's keys), agent_read.cc (reading
// the job in etcd) and agent_lead.cc (which agent plans the rounds).
// Private to agent/: nothing outside includes it.
#pragma once

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent_events.h"
#include "agent/agent_mirror.h"
#include "agent/agent_options.h"
#include "agent/agent_planner.h"
#include "agent/agent_ranges.h"
#include "agent/agent_round_guard.h"
#include "agent/agent_watch.h"
#include "elastic_policy/node_rounds.h"
#include "elastic_policy/store_outage.h"
#include "launcher/clock.h"
#include "launcher/job_signals.h"
#include "launcher/round_board.h"
#include "launcher/stop_interrupt.h"
#include "launcher/wakeup.h"
#include "launcher/worker_group.h"
#include "rendezvous/etcd_lease.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/scoped_store.h"

namespace cohort::discovery {

// What an agent stopping on a signal still gives etcd (deregistering its node, telling its workers
// to exit, and again for revoking its lease; stopped before it started anything, the revocation
// alone): past it, every request ends at once, so that an etcd that does not answer delays neither
// the workers' signal nor the agent's exit by more.
inline constexpr std::chrono::milliseconds kStopBudget{500};

struct LocalWorker {
  std::string id;
  int slot = 0;
  TimePoint checkin_by;        // --start-timeout for its first check-in
  bool checked_in = false;     // it checked in at least once
  bool expected_exit = false;  // this agent stopped it on purpose: its exit is no failure
  bool killed = false;         // stopped because the planner gave up on it
  bool told_to_leave = false;  // its next assignment is "exit" (its node drains, or the job stops)
  int assigned_round = -1;     // the last round whose assignment this agent wrote for it
};

class Agent {
 public:
  explicit Agent(const AgentOptions& options);
  int run();

 private:
  // agent_start.cc
  // Takes a lease, claims the job's id and the node's name, and reads the job for the first time.
  void start();
  // A stop signal interrupted start(): the signal's exit status.
  int stopped_at_start();
  void on_signals();
  void on_exit(const WorkerExit& exit);
  void on_failure(const std::string& worker, const std::string& how);
  void refresh();
  void on_etcd_unreachable(const std::string& why);
  void act(const AgentSnapshot& s);
  void flush_exits();
  void follow_round(const AgentSnapshot& s);
  void obey_kills(const AgentSnapshot& s);
  void raise_notice(const AgentSnapshot& s);
  void plan(const AgentSnapshot& s);
  void start_workers(const AgentSnapshot& s);
  void start_worker(int slot);
  void check_start_timeouts();
  bool register_node(const AgentSnapshot& s);
  // How many nodes have a record: from `s` if it holds every record, else read from etcd.
  int count_nodes(const AgentSnapshot& s);
  // agent_lead.cc
  // Takes the job's lead (lead_key) if nobody holds it and this node is registered in `s`.
  void take_lead(const AgentSnapshot& s);
  // Gives the lead up if this agent holds it, so that another takes it at once: its node leaves
  // the job (drain, cooldown, stop). Quietly does nothing when etcd cannot be reached: the lead
  // goes with the lease then.
  void release_lead();
  // Tells the workers to leave (they exit 0 at their next check-in), then sends them `sig`.
  void stop_job(int code, const std::string& why, int sig = SIGTERM);
  int poll_timeout() const;
  LocalWorker* local(const std::string& worker);
  // agent_drain.cc
  void drain_when_asked(const AgentSnapshot& s);
  void leave_when_drained();
  void tell_workers_to_leave();
  // agent_read.cc
  // The snapshot of the mirror, which says whether it holds every node's record.
  AgentSnapshot snapshot() const;
  // Reads the agent's key ranges (wanted_) into the mirror (logging `why` when not empty) and
  // watches them from there; with `startup`, reads the keys that name this node's workers
  // (startup_ranges), copied there.
  void read_all(const std::string& why, std::map<std::string, std::string>* startup = nullptr);
  // Widens the agent's ranges to every key when it comes to plan (a full read first: it acts on
  // no partial view), and narrows them when it no longer does; true if the mirror changed.
  bool follow_planning(const AgentSnapshot& s);
  // Brings the mirror up to date: whether it can be acted on yet (see behind_own_write), and
  // whether what the agent acts on may have changed since it last acted (in_agent_snapshot).
  enum class Read { kBehind, kUnchanged, kChanged };
  Read read_job();
  bool behind_own_write() const;
  // agent_recover.cc
  std::unique_ptr<rendezvous::EtcdLease> grant_lease();
  bool keep_round(AgentSnapshot& s, bool job_keys_lost);
  // Sets the job's marker again if the mirror does not hold it (agent_job_id.h, keep_job_marker).
  void keep_marker();
  bool counted_as_gone(const AgentSnapshot& s) const;
  bool lease_gone(const AgentSnapshot& s);
  bool recover_lease(const AgentSnapshot& s);
  bool may_count_absent_as_gone(const AgentSnapshot& s);
  bool workers_running() const;

  const AgentOptions& options_;
  Fd signals_ = block_job_signals();  // before any thread, so that every thread inherits the mask
  // Ends this thread's requests to etcd on a stop signal, and once the stop's time for etcd is
  // over (kStopBudget); the watch's and the lease renewals' threads are never interrupted.
  StopInterrupt interrupt_;
  bool signalled_ = false;  // a stop signal came: the lease's revocation gets kStopBudget too
  rendezvous::EtcdStoreOptions store_options_;
  rendezvous::EtcdStore store_;
  // The workers' elastic protocol, through a store of its own: what the agent writes there
  // (assignments, notices, abandons) is not read back, so it keeps no agent behind_own_write.
  rendezvous::EtcdStore board_store_{store_options_};
  rendezvous::ScopedStore elastic_store_{board_store_, rendezvous::kElasticScope};
  RoundBoard board_{elastic_store_};  // the launcher's side of the workers' elastic protocol
  Wakeup wake_;
  std::atomic<bool> lease_lost_{false};
  std::unique_ptr<rendezvous::EtcdLease> lease_;
  std::unique_ptr<AgentWatch> watch_;
  KeyRanges wanted_;  // the keys the agent reads (agent_ranges.h)
  JobMirror mirror_;  // the job's keys in etcd, as read and watched
  // The last full read (or try): the whole job is read at least once a lease TTL, which is how
  // an outage is noticed.
  TimePoint last_full_read_;
  std::optional<std::string> reread_;  // why the next read reads the whole job
  bool unacted_ = false;  // the mirror took changes that the agent has not acted on yet
  WorkerGroup workers_;
  AgentEvents events_{options_};
  LocalLauncher launcher_{"", /*die_with_parent=*/true};
  std::map<int, LocalWorker> local_;       // by WorkerGroup id
  int spawns_ = 0;                         // workers started, for WorkerGroup ids
  std::map<int, int> slot_spawns_;         // slot -> workers started there, for worker ids
  int followed_round_ = -1;                // the last round this agent announced
  std::optional<std::string> registered_;  // the node record last written
  std::map<std::string, std::string> unreported_exits_;
  std::map<std::string, std::string> reported_exits_;  // written again if etcd loses them
  // A local worker's exit that the members of round `round` must hear of.
  struct ExitNotice {
    std::string why;
    int round = -1;
  };
  std::optional<ExitNotice> exit_notice_;
  int noticed_generation_ = 0;  // the last host notice this agent raised
  std::optional<RoundPlanning> planning_;
  RoundGuard round_guard_;  // the last round record read, republished if etcd loses it (keep_round)
  PlanningLimits limits_;
  AgentLastCall last_call_{options_.last_call, options_.max_nodes};
  elastic_policy::NodeCooldown cooldown_{options_.cooldown};  // after this node's failures
  const TimePoint started_ = steady_now();
  bool dirty_ = true;        // something besides etcd's keys changed: act on the next read
  bool watch_woke_ = false;  // the watch delivered: read, and act if the snapshot's keys changed
  std::optional<TimePoint> retry_read_at_;
  elastic_policy::StoreOutage outage_{options_.elastic_timeout};  // etcd's, if it cannot be reached
  int republished_round_ = -1;            // the last round this agent republished (keep_round)
  std::optional<TimePoint> marker_kept_;  // when this agent last set the job's marker again
  // When nodes without a record count as gone (the policy's rule; recover_lease starts its grace).
  elastic_policy::AbsentNodes absent_;
  TimePoint last_answer_ = steady_now();  // the last read that etcd answered
  bool waiting_logged_ = false;
  bool formed_ = false;               // a round has been published
  elastic_policy::NodeDrain drain_;   // a worker of this node drained: the node is leaving the job
  std::optional<AgentJobView> view_;  // the last one read
  bool stopping_ = false;
  int exit_code_ = 0;
};

}  // namespace cohort::discovery
