#include "agent/agent_job.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>

#include "agent/agent.h"
#include "agent/agent_cli.h"
#include "agent/agent_events.h"
#include "agent/agent_job_id.h"
#include "agent/agent_name.h"
#include "agent/agent_planner.h"
#include "agent/agent_watch.h"
#include "base/log.h"
#include "cohort/errors.h"
#include "elastic_policy/elastic_policy.h"
#include "elastic_policy/node_round_plan.h"
#include "elastic_policy/node_rounds.h"
#include "elastic_policy/store_outage.h"
#include "launcher/job_report.h"
#include "launcher/job_signals.h"
#include "launcher/seconds_text.h"
#include "launcher/wakeup.h"
#include "launcher/worker_env.h"
#include "launcher/worker_group.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/etcd_lease.h"

namespace cohort::discovery {
namespace {

// How soon a read of etcd that failed is tried again.
constexpr std::chrono::milliseconds kRetryRead{500};

rendezvous::EtcdOptions interruptible(rendezvous::EtcdOptions etcd, int interrupt_fd) {
  etcd.interrupt_fd = interrupt_fd;
  return etcd;
}

std::string exit_text(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "0" : describe_exit(status);
}

}  // namespace

Agent::Agent(const AgentOptions& options)
    : options_(options),
      store_options_{.etcd = interruptible(options.etcd, interrupt_.fd()),
                     .prefix = agent_job_prefix(options.job_id),
                     .secret = options.secret},
      store_(store_options_),
      workers_(options.term_grace, options.output),
      limits_{.min_nodes = options.min_nodes,
              .max_nodes = options.max_nodes,
              .reset_limit = options.reset_limit,
              .checkin_timeout = options.checkin_timeout,
              .elastic_timeout = options.elastic_timeout} {
  // Its own thread: a stop signal ends the agent's requests, not the watch that follows the job.
  auto watched = store_options_;
  watched.etcd.interrupt_fd = -1;
  watch_ = std::make_unique<AgentWatch>(watched, wake_);
  wanted_ = follower_ranges(options_.node);
}

int Agent::run() {
  try {
    start();
  } catch (const rendezvous::EtcdInterrupted&) {
    return stopped_at_start();
  }
  refresh();
  while (!(stopping_ && workers_.finished())) {
    std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}, {wake_.fd(), POLLIN, 0}};
    workers_.add_poll_fds(fds);
    int rc = ::poll(fds.data(), fds.size(), poll_timeout());
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    if (rc == 0) dirty_ = true;  // a deadline came
    if (rc > 0) {
      if (fds[0].revents & POLLIN) on_signals();
      if (fds[1].revents & POLLIN) {
        wake_.drain();
        watch_woke_ = true;
      }
      workers_.forward_ready(fds);
    }
    for (const auto& exit : workers_.reap()) on_exit(exit);
    workers_.on_time();
    bool retry = retry_read_at_ && steady_now() >= *retry_read_at_;
    if (!stopping_ && (dirty_ || watch_woke_ || retry)) refresh();
  }
  if (signalled_) interrupt_.stop_within(kStopBudget);  // for the lease's revocation
  events_.job_end(exit_code_);
  return exit_code_;
}

// As any stop: the workers are told to leave before they get the signal, which they take as a
// drain, so that they exit 0 at their next commit (docs/operations.md, "Signals").
void Agent::on_signals() {
  for (int sig : read_job_signals(signals_.get(), workers_)) {
    std::string why = std::string("received SIG") + sigabbrev_np(sig);
    if (!signalled_) interrupt_.stop_within(kStopBudget);  // what the stop still tells etcd
    signalled_ = true;
    if (exit_code_ == 0) exit_code_ = 128 + sig;
    if (!stopping_) {
      stop_job(exit_code_, why, sig);
      continue;
    }
    report(why + "; stopping the workers");
    events_.job_stopping(why);
    workers_.stop_all(sig);
  }
}

LocalWorker* Agent::local(const std::string& worker) {
  for (auto& [id, w] : local_) {
    if (w.id == worker) return &w;
  }
  return nullptr;
}

void Agent::on_exit(const WorkerExit& exit) {
  LocalWorker w = local_.at(exit.id);
  local_.erase(exit.id);
  dirty_ = true;
  unreported_exits_[w.id] = w.told_to_leave ? "left" : exit_text(exit.status);
  bool finished = WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 0 && !w.killed;
  bool stopped = stopping_ || w.expected_exit;
  events_.worker_exit(w.id, exit, w.killed ? "failed" : exit_verdict(exit, stopped));
  if (stopped) {
    log::info("worker ", w.id, " ", describe_exit(exit.status));
    return;
  }
  if (exit.by_passed_signal) {  // the program did not take it: no fault of this node's
    announce("worker " + w.id + " " + describe_exit(exit.status) +
             ", a signal cohortrun passed on: not a failure; its slot starts another");
    exit_notice_ = {"worker " + w.id + " left", followed_round_};
    return;
  }
  if (finished) {
    // Finished: never a reason to end the others; the rest of its round regroup without it.
    announce("worker " + w.id + " finished (exit status 0)");
    exit_notice_ = {"worker " + w.id + " finished", followed_round_};
    return;
  }
  on_failure(w.id, describe_exit(exit.status));
}

// A worker of this node failed: the node leaves the job (its registration goes first, so that no
// planner waits for its other workers), for the cooldown if there is one, for good otherwise.
void Agent::on_failure(const std::string& worker, const std::string& how) {
  announce("worker " + worker + " " + how);
  exit_notice_ = {"worker " + worker + " on " + options_.node + " failed", followed_round_};
  auto wait = cooldown_.failed(steady_now());
  if (!wait) {
    return stop_job(1, "node " + options_.node + " leaves the job after worker " + worker +
                           " failed (no --blacklist-cooldown-range)");
  }
  announce("node " + options_.node + " is blacklisted for " + seconds_text(*wait));
  events_.blacklist(options_.node, cooldown_.failures(), *wait);
  try {
    store_.remove(agent_key(options_.node));
    registered_.reset();
    release_lead();
  } catch (const Error& e) {
    log::warning("agent: could not deregister node ", options_.node, ": ", e.what());
  }
  for (auto& [id, w] : local_) {
    w.expected_exit = true;
    workers_.stop(id, SIGKILL);
  }
}

void Agent::refresh() {
  // Acts on what it reads unless only the watch woke it, with changes no agent acts on.
  bool act_anyway = dirty_ || lease_lost_ || retry_read_at_;
  dirty_ = false;
  watch_woke_ = false;
  retry_read_at_.reset();
  try {
    watch_->throw_if_failed();
    flush_exits();
    Read read = read_job();
    if (read == Read::kBehind) return;
    if (outage_.answered()) {
      announce("etcd answers again");
      events_.etcd_recovered();
    }
    last_answer_ = steady_now();
    absent_.answered(last_answer_);
    if (read == Read::kUnchanged && !act_anyway) return;
    unacted_ = false;
    auto snapshot = this->snapshot();
    if (follow_planning(snapshot)) snapshot = this->snapshot();
    if (!keep_round(snapshot, !mirror_.value("job"))) return;
    keep_marker();
    if (lease_gone(snapshot) && !recover_lease(snapshot)) return;
    act(snapshot);
  } catch (const rendezvous::EtcdLeaseNotFound& e) {
    // etcd answered: no outage, but the lease this agent wrote under is gone. Read again at once.
    log::info("agent: etcd no longer knows this agent's lease: ", e.what());
    lease_lost_ = true;
    retry_read_at_ = steady_now();
  } catch (const rendezvous::StoreUnreachable& e) {
    on_etcd_unreachable(e.what());
  } catch (const rendezvous::EtcdInterrupted&) {
    dirty_ = true;  // a stop signal came: the loop takes it next, and stops
  } catch (const Error& e) {
    // etcd answered, or this agent failed: no outage to wait out, a fault to report now.
    stop_job(1, "agent for node " + options_.node + ": " + e.what());
  }
}

// The workers train on without etcd (rank 0 asks for host notices with short requests); how long
// the agent waits for etcd is the policy's rule (elastic_policy/store_outage.h).
void Agent::on_etcd_unreachable(const std::string& why) {
  TimePoint now = steady_now();
  reread_ = "etcd could not be reached";
  auto verdict = outage_.unreachable(last_answer_, workers_running(), now);
  if (verdict.began) {
    announce(
        "etcd cannot be reached; the workers train on, and this agent waits for etcd while "
        "they run (at most --elastic-timeout " +
        seconds_text(options_.elastic_timeout) + " once none runs): " + why);
    events_.etcd_unreachable(why);
  }
  if (verdict.stop) {
    return stop_job(1, "etcd could not be reached, and no worker of node " + options_.node +
                           " ran, for --elastic-timeout " + seconds_text(options_.elastic_timeout) +
                           ": " + why);
  }
  retry_read_at_ = now + kRetryRead;
}

void Agent::flush_exits() {
  while (!unreported_exits_.empty()) {
    auto it = unreported_exits_.begin();
    store_.set(exit_key(it->first), it->second);
    reported_exits_.insert(*it);
    unreported_exits_.erase(it);
  }
}

void Agent::act(const AgentSnapshot& s) {
  const auto& view = s.view;
  view_ = view;
  events_.observe(s);
  if (view.last_round && view.last_round->stop) {
    mark_job_ended(store_);
    return stop_job(
        1, "round " + std::to_string(view.last_round_number) + ": " + *view.last_round->stop);
  }
  if (elastic_policy::node_job_done(view)) {
    announce("the workers of round " + std::to_string(view.last_round_number) +
             " finished; the job is done");
    mark_job_ended(store_);
    return stop_job(0, "");
  }
  // The policy's rule decides; the nodes are counted (a read for an agent that does not lead) only
  // for its message, once it stops the job.
  auto limits = node_round_limits(limits_);
  if (!view.last_round && elastic_policy::first_round_stop(0, limits, started_, steady_now())) {
    return stop_job(
        1, *elastic_policy::first_round_stop(count_nodes(s), limits, started_, steady_now()));
  }
  formed_ = view.last_round.has_value();
  for (auto& [id, w] : local_) w.checked_in = w.checked_in || view.checkins.contains(w.id);
  obey_kills(s);
  check_start_timeouts();
  drain_when_asked(s);
  leave_when_drained();
  if (stopping_) return;
  follow_round(s);
  start_workers(s);
  bool registered = register_node(s);
  take_lead(s);
  raise_notice(s);
  // A snapshot without this node's record, or without every check-in, is no base for a plan.
  if (!registered && holds_every_checkin(mirror_.ranges())) plan(s);
}

void Agent::obey_kills(const AgentSnapshot& s) {
  for (auto& [id, w] : local_) {
    auto kill = s.kills.find(w.id);
    if (kill == s.kills.end() || w.killed) continue;
    announce("killing worker " + w.id + ": the planner gave up on it (" + kill->second + ")");
    events_.worker_timeout(w.id, "planner");
    w.killed = true;
    workers_.stop(id, SIGKILL);  // its exit then counts as a failure
  }
}

void Agent::check_start_timeouts() {
  TimePoint now = steady_now();
  for (auto& [id, w] : local_) {
    if (w.killed) continue;
    auto why =
        elastic_policy::start_overdue(w.checkin_by, w.checked_in, options_.start_timeout, now);
    if (!why) continue;
    announce("worker " + w.id + " " + *why);
    events_.worker_timeout(w.id, "start");
    w.killed = true;
    workers_.stop(id, SIGKILL);
  }
}

// Writes the assignments of this node's members of the last round: each agent its own, from the
// published round, so that no planner ever leaves a round half assigned.
void Agent::follow_round(const AgentSnapshot& s) {
  if (!s.view.last_round) return;
  const AgentRound& round = *s.view.last_round;
  std::vector<std::string> hosts;
  for (const auto& m : round.members) hosts.push_back(m.node);
  for (int rank = 0; rank < static_cast<int>(round.members.size()); ++rank) {
    const AgentMember& m = round.members[rank];
    LocalWorker* w = m.node == options_.node ? local(m.worker) : nullptr;
    if (w == nullptr || w->assigned_round == s.view.last_round_number) continue;
    rendezvous::Assignment assignment{.round = s.view.last_round_number,
                                      .placement = Placement::from_hosts(rank, hosts),
                                      .generation = round.generation};
    board_.assign(m.worker, m.entry, assignment);
    w->assigned_round = s.view.last_round_number;
    for (auto& [id, lw] : local_) {
      if (&lw == w) workers_.place(id, rank, s.view.last_round_number);
    }
  }
  if (followed_round_ == s.view.last_round_number) return;
  followed_round_ = s.view.last_round_number;
  log::info("round ", followed_round_, ": ", describe_members(round));
  auto cause = s.causes.find(followed_round_);
  events_.round(followed_round_, round,
                cause == s.causes.end() ? std::nullopt : std::optional(cause->second));
  events_.observe(s);  // reports the snapshot already holds for the round
}

void Agent::start_workers(const AgentSnapshot& s) {
  if (drain_.draining()) return;
  if (!cooldown_.may_start(steady_now())) return;
  using elastic_policy::NodeStart;
  NodeStart start = elastic_policy::node_may_start(s.view, options_.node, options_.max_nodes);
  if (start == NodeStart::kFinishing) return;
  if (start == NodeStart::kRoundFull) {
    if (!waiting_logged_) announce("the job has --nnodes' most nodes; this node waits");
    waiting_logged_ = true;
    return;
  }
  waiting_logged_ = false;
  for (int slot = 0; slot < options_.nproc_per_node; ++slot) {
    bool taken = std::any_of(local_.begin(), local_.end(),
                             [&](const auto& kv) { return kv.second.slot == slot; });
    if (!taken) start_worker(slot);
  }
}

void Agent::start_worker(int slot) {
  std::string id = agent_worker_id(options_.node, slot, slot_spawns_[slot]++);
  int key = spawns_++;
  auto env = agent_worker_environment(id, options_.address, options_.secret, store_options_.prefix,
                                      options_.etcd);
  LaunchedWorker launched = launcher_.launch(options_.node, "worker " + id, options_.command, env);
  events_.worker_start(id, slot, launched.pid);
  workers_.add(key, std::move(launched), {id, {}, {}});
  local_[key] = {.id = id,
                 .slot = slot,
                 .checkin_by = elastic_policy::start_due(steady_now(), options_.start_timeout)};
  log::info("started worker ", id);
}

// The node's record: its slots and running workers. Written whenever `s` does not hold it as it
// should be: it changed, or it is missing (deleted, expired with the lease, lost by etcd) or was
// refused (overwritten by a writer without the secret). True if it was written.
bool Agent::register_node(const AgentSnapshot& s) {
  if (drain_.draining()) return false;
  AgentNode node{.slots = options_.nproc_per_node};
  for (const auto& [id, w] : local_) {
    if (!w.expected_exit && !w.killed) node.workers.push_back(w.id);
  }
  std::string record = format_agent_node(node);
  if (!cooldown_.may_register(node.workers.size())) return false;
  auto there = s.view.nodes.find(options_.node);
  if (there != s.view.nodes.end() && there->second == node) return false;
  if (registered_ == record) {
    announce("the record of node " + options_.node +
             " is missing from etcd or was refused; registering it again");
  }
  store_.set_leased(agent_key(options_.node), record, lease_->id());
  registered_ = record;
  return true;
}

// New workers here wait outside the last round: its members must regroup at their next commit,
// as they must after one of this node's workers finished or failed while they were members.
void Agent::raise_notice(const AgentSnapshot& s) {
  if (!s.view.last_round) return;
  if (exit_notice_ && exit_notice_->round != s.view.last_round_number) exit_notice_.reset();
  std::optional<std::string> why;
  if (exit_notice_) why = exit_notice_->why;
  for (const auto& [id, w] : local_) {
    const std::string& worker = w.id;  // clang 14 cannot capture a structured binding
    bool in_round =
        std::any_of(s.view.last_round->members.begin(), s.view.last_round->members.end(),
                    [&](const AgentMember& m) { return m.worker == worker; });
    if (!in_round && w.checked_in && !w.killed && !w.expected_exit) {
      why = "worker " + w.id + " on " + options_.node + " is ready to join";
    }
  }
  int generation = s.view.last_round->generation + 1;
  if (!why || noticed_generation_ >= generation) return;
  board_.notice(generation, *why);
  log::info("published host notice ", generation, ": ", *why);
  noticed_generation_ = generation;
  exit_notice_.reset();
}

// Claims the planning of the next round when one is needed and nobody has, and plans it.
void Agent::plan(const AgentSnapshot& s) {
  if (!planning_) {
    auto why = elastic_policy::round_needed(s.view, options_.min_nodes);
    if (!why || (!s.view.last_round && !last_call_.over(s.view, steady_now()))) return;
    int round = s.view.last_round_number + 1;
    auto claim = s.planners.find(round);
    if (claim != s.planners.end() && claim->second != options_.node) return;  // its lease decides
    if (!may_count_absent_as_gone(s)) return;
    if (!store_.create(planner_key(round), options_.node, lease_->id())) return;
    maybe_die_planning(options_, round);
    planning_.emplace(round, *why, store_, board_, s, steady_now());
  }
  planning_->name_cause(events_.noted_cause());
  // Published: `s` is the snapshot the round was published from, and the next one starts afresh.
  if (!planning_->step(s, limits_, steady_now())) return;
  if (planning_->published()) round_guard_.published(planning_->round(), *planning_->published());
  planning_.reset();
}

void Agent::stop_job(int code, const std::string& why, int sig) {
  if (stopping_) return;
  if (!why.empty()) report(why + "; stopping the workers");
  if (!why.empty()) events_.job_stopping(why);
  stopping_ = true;
  exit_code_ = code;
  try {
    // Now, not when the lease is revoked at the end; without etcd, the lease deregisters it.
    if (!outage_.ongoing()) store_.remove(agent_key(options_.node));
    if (!outage_.ongoing()) release_lead();
    if (!outage_.ongoing()) tell_workers_to_leave();
  } catch (const Error& e) {
    log::info("agent: could not deregister node ", options_.node, ": ", e.what());
  }
  workers_.stop_all(sig);
}

int Agent::poll_timeout() const {
  std::optional<TimePoint> next = workers_.next_deadline();
  auto consider = [&](const std::optional<TimePoint>& t) {
    if (t && (!next || *t < *next)) next = t;
  };
  if (!stopping_) {
    consider(retry_read_at_);
    consider(last_full_read_ + options_.lease_ttl);
    consider(cooldown_.until());
    consider(absent_.grace_until());
    if (planning_) consider(planning_->next_deadline(limits_, steady_now()));
    if (!formed_)
      consider(elastic_policy::first_round_deadline(node_round_limits(limits_), started_));
    if (!formed_) consider(last_call_.deadline());
    for (const auto& [id, w] : local_) {
      if (!w.checked_in && !w.killed) consider(w.checkin_by);
    }
  }
  return next ? poll_millis(steady_now(), *next) : -1;
}

std::string agent_job_prefix(const std::string& job_id) {
  return "/cohort/" + job_id + "/";
}

int run_agent(const AgentOptions& options) {
  Agent agent(options);
  return agent.run();
}

}  // namespace cohort::discovery
