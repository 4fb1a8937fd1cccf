#include "elastic_job/elastic_job.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

#include "base/log.h"
#include "cohort/errors.h"
#include "discovery/host_discovery.h"
#include "elastic_job/elastic_events.h"
#include "elastic_job/elastic_roster.h"
#include "elastic_job/elastic_timeouts.h"
#include "elastic_job/round_board.h"
#include "elastic_policy/elastic_policy.h"
#include "launcher/job_report.h"
#include "launcher/job_signals.h"
#include "launcher/seconds_text.h"
#include "launcher/wakeup.h"
#include "launcher/worker_env.h"
#include "launcher/worker_group.h"
#include "rendezvous/hmac.h"
#include "rendezvous/server.h"

namespace cohort::discovery {
namespace {

using std::chrono::milliseconds;

class ElasticJob {
 public:
  explicit ElasticJob(const ElasticJobOptions& options);
  int run();

 private:
  // Events.
  void on_signals();
  void on_exit(const WorkerExit& exit);
  void on_worker_failed(ElasticWorker& w, const WorkerExit& exit);
  void collect_checkins(const std::vector<WorkerEntry>& arrived);
  void on_checkin(ElasticWorker& w);
  void on_discovery(const DiscoveryResult& result);
  void on_slot_changes(const SlotChanges& changes, const ElasticWorker* drained_by = nullptr);
  void drain(ElasticWorker& w);
  void on_time();
  // Decisions, after every wake-up.
  void step();
  void start_workers();
  void start_worker(const SlotRef& slot);
  void plan_round_when_ready();
  void publish_round(const RoundPlan& plan);
  void finish_when_done();
  // Actions.
  void notice_change();
  void abandon_round(const std::string& why);
  void tell_exit(ElasticWorker& w);
  void stop_job(int code, const std::string& why);
  int poll_timeout() const;

  const ElasticJobOptions& options_;
  Fd signals_;
  ElasticInbox inbox_;  // the check-ins and reports the rendezvous server received
  RendezvousEndpoint endpoint_;
  std::unique_ptr<rendezvous::RendezvousServer> server_;
  std::unique_ptr<rendezvous::Store> store_;  // the server's elastic scope
  std::optional<RoundBoard> board_;
  std::unique_ptr<HostDiscovery> discovery_;
  elastic_policy::ElasticPolicy policy_;  // every decision of rules 1-10 (elastic_policy.h)
  ElasticRoster roster_;
  WorkerGroup workers_;
  ElasticEvents events_;
  SlotChanges initial_slots_;  // fixed hosts: recorded once the job starts

  std::vector<int> members_;  // the current round's workers, by rank
  int generation_ = 0;        // the last host notice published
  int noticed_round_ = -2;    // the round whose members were last sent a notice
  int abandoned_round_ = -1;  // the last round given up (elastic_protocol.h)
  std::optional<TimePoint> checkin_deadline_;
  bool stopping_ = false;
  int exit_code_ = 0;
};

ElasticJob::ElasticJob(const ElasticJobOptions& options)
    : options_(options),
      policy_(options.hosts),
      workers_(options.term_grace, options.output),
      events_(options.events) {
  if (options_.discovery_script) {
    discovery_ = std::make_unique<HostDiscovery>(
        HostDiscoveryOptions{.command = {*options_.discovery_script},
                             .interval = options_.discovery_interval,
                             .limits = {.timeout = options_.discovery_timeout},
                             .default_slots = options_.slots_per_host});
  } else {
    // Fixed hosts: an unreachable one fails the job now rather than at its first launch.
    for (const auto& h : options_.fixed_hosts) launcher_for(h.host, options_.launch);
    initial_slots_ = policy_.fixed_hosts(options_.fixed_hosts);
  }
  if (options_.checkin_timeout.count() <= 0) {
    throw InvalidArgument("--checkin-timeout must be > 0");
  }
  check_job_timeouts(
      {.checkin = options_.checkin_timeout, .elastic = options_.hosts.elastic_timeout});
  // Signals are blocked before the server's threads exist, so they all inherit the mask.
  signals_ = block_job_signals();
  bool any_remote = options_.discovery_script.has_value();  // discovered hosts may be anywhere
  for (const auto& h : options_.fixed_hosts) any_remote = any_remote || !is_local_host(h.host);
  endpoint_ = {rendezvous_bind_address(any_remote), 0,
               rendezvous::random_bytes(rendezvous::kSecretSize)};
  server_ = start_elastic_server(
      endpoint_, std::max(options_.start_timeout, options_.hosts.elastic_timeout), inbox_);
  store_ = server_->store(rendezvous::kElasticScope);
  board_.emplace(*store_);
}

int ElasticJob::run() {
  log::info("rendezvous server on ", endpoint_.addr, ":", endpoint_.port);
  events_.job_start(options_.command, options_.hosts.min_np, options_.hosts.max_np);
  events_.slot_changes(initial_slots_);
  step();
  while (!(stopping_ && workers_.finished())) {
    std::vector<pollfd> fds{{signals_.get(), POLLIN, 0}, {inbox_.fd(), POLLIN, 0}};
    if (discovery_ && !stopping_) {
      for (const auto& fd : discovery_->poll_fds()) fds.push_back(fd);
    }
    workers_.add_poll_fds(fds);
    int rc = ::poll(fds.data(), fds.size(), poll_timeout());
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll: ") + std::strerror(errno));
    if (rc > 0) {
      if (fds[0].revents & POLLIN) on_signals();
      workers_.forward_ready(fds);
    }
    for (const auto& exit : workers_.reap()) on_exit(exit);
    Arrivals arrived = inbox_.take();
    collect_checkins(arrived.checkins);
    events_.collect_reports(*board_, arrived.resets, roster_, policy_.round());
    if (discovery_ && !stopping_) {
      if (auto result = discovery_->advance()) on_discovery(*result);
    }
    on_time();
    if (!stopping_) step();
  }
  server_->stop();
  events_.job_end(exit_code_);
  return exit_code_;
}

int ElasticJob::poll_timeout() const {
  std::optional<TimePoint> next = workers_.next_deadline();
  auto consider = [&](const std::optional<TimePoint>& t) {
    if (t && (!next || *t < *next)) next = t;
  };
  for (const auto& [id, w] : roster_.all()) {
    if (w.running) consider(w.leave_by);
  }
  if (!stopping_) {
    consider(policy_.next_wakeup());
    consider(checkin_deadline_);
    for (const auto& [id, w] : roster_.all()) {
      if (w.running && !w.checkin && w.entry == 0) consider(w.checkin_by);
    }
  }
  int timeout = next ? poll_millis(steady_now(), *next) : -1;
  if (discovery_ && !stopping_) {
    int until_discovery = discovery_->poll_timeout();
    if (timeout < 0 || until_discovery < timeout) timeout = until_discovery;
  }
  return timeout;
}

void ElasticJob::on_signals() {
  for (int sig : read_job_signals(signals_.get(), workers_)) {
    report(std::string("received SIG") + sigabbrev_np(sig) + "; stopping the workers");
    if (exit_code_ == 0) exit_code_ = 128 + sig;
    events_.job_stopping(std::string("received SIG") + sigabbrev_np(sig));
    stopping_ = true;
    discovery_.reset();
    workers_.stop_all(sig);
  }
}

void ElasticJob::on_exit(const WorkerExit& exit) {
  ElasticWorker* w = roster_.find(exit.id);
  if (w == nullptr) return;
  w->running = false;
  bool was_member = w->in_round;
  w->in_round = false;
  bool stopped = stopping_ || w->leaving;
  events_.worker_exit(*w, exit, exit_verdict(exit, stopped));
  if (stopped) {
    log::info(w->name(), " ", describe_exit(exit.status));
    return;
  }
  if (was_member) abandon_round(w->name() + " " + describe_exit(exit.status));
  if (!exit.exited_zero()) return on_worker_failed(*w, exit);
  // Finished: never a reason to end the others (Horovod #3852); the rest of its round regroup.
  w->finished = true;
  policy_.worker_finished();
  announce(w->name() + " finished (exit status 0)");
  events_.note_cause("worker_finished", w->name() + " finished");
  if (was_member) notice_change();
}

void ElasticJob::on_worker_failed(ElasticWorker& w, const WorkerExit& exit) {
  std::string how = w.name() + " " + describe_exit(exit.status);
  if (exit.by_passed_signal) {  // the program did not take it: no fault of its host's
    announce(how + ", a signal cohortrun passed on: not a failure; its slot starts another");
    events_.note_cause("worker_left", how);
    return notice_change();
  }
  announce(w.name() + " (pid " + std::to_string(exit.pid) + ") " + describe_exit(exit.status));
  events_.note_cause("failure", how);
  bool others_alive = roster_.others_running_on(w.slot.host, w.id);
  on_slot_changes(policy_.worker_failed(w.slot.host, w.slot.slot, others_alive));
  notice_change();
}

// Only the check-ins that arrived since the last wake-up: one for an entry the worker is not at
// (a round published since) or from a worker gone is no news.
void ElasticJob::collect_checkins(const std::vector<WorkerEntry>& arrived) {
  for (const WorkerEntry& a : arrived) {
    ElasticWorker* w = roster_.find(a.id);
    if (w == nullptr || !w->running || w->checkin || w->entry != a.entry) continue;
    w->checkin = board_->checkin(a.id, a.entry, w->name());
    if (w->checkin) on_checkin(*w);
  }
}

void ElasticJob::on_checkin(ElasticWorker& w) {
  log::info(w.name(), " checked in for entry ", w.entry, ": ", kind_word(w.checkin->kind),
            w.checkin->reason.empty() ? "" : " (" + w.checkin->reason + ")");
  if (w.checkin->kind == rendezvous::CheckIn::Kind::kDrained) drain(w);
  if (stopping_ || w.leaving || !policy_.usable(w.slot)) return tell_exit(w);
  bool left_round = w.in_round;
  w.in_round = false;
  if (left_round && w.checkin->kind != rendezvous::CheckIn::Kind::kStart) {
    abandon_round(w.name() + " left it (" + kind_word(w.checkin->kind) + ")");
    events_.note_cause("worker_left", w.name() + " left it (" + kind_word(w.checkin->kind) + ")");
  }
  if (left_round && w.checkin->kind != rendezvous::CheckIn::Kind::kStart && !checkin_deadline_) {
    // The rest of its round is on its way (a failed collective fails everywhere, an interrupt
    // is raised at the same commit everywhere), but a frozen worker must not hold the job.
    checkin_deadline_ = steady_now() + options_.checkin_timeout;
  }
  // A member leaving, or a new worker ready: the others learn it at their next commit.
  notice_change();
}

// The worker left its round at a commit because its machine is going (SIGTERM): its host leaves
// the job, and the rest of the round, interrupted at the same commit, regroup without it.
void ElasticJob::drain(ElasticWorker& w) {
  announce(w.name() + " drained");
  if (w.in_round) abandon_round(w.name() + " drained");
  w.in_round = false;
  events_.note_cause("drain", w.name() + " drained");
  on_slot_changes(policy_.drained(w.slot.host), &w);
  notice_change();
}

void ElasticJob::on_discovery(const DiscoveryResult& result) {
  if (result.status == DiscoveryStatus::kFailed) {
    // A script that keeps failing the same way is reported once, not every interval.
    if (policy_.discovery_failed(result.error).report_failure) {
      announce(result.error);
      events_.discovery_failure(result.error);
    }
    return;
  }
  if (policy_.discovery_worked().report_recovery) {
    announce("the host discovery script works again");
    events_.discovery_recovered();
  }
  if (result.status == DiscoveryStatus::kUnchanged) return;
  auto running = [&](const std::string& host) {
    return std::any_of(roster_.all().begin(), roster_.all().end(), [&](const auto& kv) {
      return kv.second.running && !kv.second.leaving && kv.second.slot.host == host;
    });
  };
  on_slot_changes(policy_.discovered(discovery_->hosts(), running));
}

void ElasticJob::on_slot_changes(const SlotChanges& changes, const ElasticWorker* drained_by) {
  events_.slot_changes(changes, drained_by);
  for (const auto& host : changes.drained) {
    announce("host " + host + " drains: its workers leave the job at their next commit");
  }
  if (changes.empty()) return;
  announce("usable slots changed: " + changes.describe());
  for (const auto& slot : changes.removed) {
    ElasticWorker* w = roster_.on_slot(slot);
    // Its round must regroup without it; new workers on added slots announce themselves when
    // they check in.
    if (w != nullptr) notice_change();
  }
}

void ElasticJob::on_time() {
  TimePoint now = steady_now();
  workers_.on_time();
  for (auto& [id, w] : roster_.all()) {
    if (w.running && w.leave_by && *w.leave_by <= now) {
      announce(w.name() + " was told to leave the job but is still running; stopping it");
      w.leave_by.reset();
      workers_.stop(id, SIGTERM);
    }
  }
  if (stopping_) return;
  if (auto why = policy_.hold_expired()) return stop_job(1, *why);
  on_slot_changes(policy_.tick());
  for (auto& [id, w] : roster_.all()) {
    if (!w.running || w.entry > 0 || !w.checkin_by) continue;
    auto why = elastic_policy::start_overdue(*w.checkin_by, w.checkin.has_value(),
                                             options_.start_timeout, now);
    if (!why) continue;
    announce(w.name() + " " + *why);
    events_.worker_timeout(w, "start");
    w.checkin_by.reset();
    workers_.stop(id, SIGKILL);
  }
  if (!checkin_deadline_ || now < *checkin_deadline_) return;
  checkin_deadline_.reset();
  for (ElasticWorker* w : roster_.wanted(policy_.hosts())) {
    if (w->checkin) continue;
    announce(w->name() + " did not check in within --checkin-timeout " +
             seconds_text(options_.checkin_timeout) +
             " after its round broke up; taking it for failed and killing it");
    events_.worker_timeout(*w, "checkin");
    workers_.stop(w->id, SIGKILL);  // its exit then counts as a failure
  }
}

void ElasticJob::step() {
  if (auto why = policy_.stop_reason()) return stop_job(1, *why);
  start_workers();
  plan_round_when_ready();
  finish_when_done();
}

void ElasticJob::start_workers() {
  for (const auto& slot :
       policy_.slots_to_start(ElasticRoster::slots_of(roster_.alive_in_order()))) {
    // A launch that failed just now blacklisted the host: skip its other slots.
    if (policy_.usable(slot)) start_worker(slot);
  }
}

void ElasticJob::start_worker(const SlotRef& slot) {
  ElasticWorker& w = roster_.add(slot);
  std::string id = std::to_string(w.id);
  try {
    auto launcher = launcher_for(slot.host, options_.launch);
    auto towards = endpoint_towards(endpoint_, slot.host, options_.launch.network_interface);
    LaunchedWorker launched = launcher->launch(slot.host, "worker " + id, options_.command,
                                               elastic_worker_environment(id, slot.host, towards));
    events_.worker_start(w, launched.pid);
    workers_.add(w.id, std::move(launched), {w.label(), w.rank, std::nullopt});
    w.checkin_by = elastic_policy::start_due(steady_now(), options_.start_timeout);
    log::info("started ", w.name());
  } catch (const Error& e) {
    w.running = false;
    announce(std::string(e.what()));
    events_.launch_failed(w, e.what());
    on_slot_changes(policy_.launch_failed(slot.host));
  }
}

void ElasticJob::plan_round_when_ready() {
  std::vector<ElasticWorker*> wanted = roster_.wanted(policy_.hosts(), policy_.takes_newcomers());
  bool all_in = std::all_of(wanted.begin(), wanted.end(),
                            [](const ElasticWorker* w) { return w->checkin.has_value(); });
  auto decision = policy_.decide_round(ElasticRoster::slots_of(wanted), all_in);
  using Kind = elastic_policy::RoundDecision::Kind;
  if (decision.kind == Kind::kStop) return stop_job(1, decision.why);
  if (decision.kind == Kind::kForm) publish_round(decision.plan);
}

void ElasticJob::publish_round(const RoundPlan& plan) {
  // Every member that joined the last round left a watcher's request for its abandon key waiting
  // on the server (elastic/round_watch.h): answering it now ends those requests, so their number
  // never grows past one round's members however many rounds the job goes through.
  const int round = policy_.round();  // the one formed now
  if (round > 0 && abandoned_round_ != round - 1) {
    board_->abandon(round - 1, "superseded by round " + std::to_string(round));
  }
  members_.clear();
  for (auto& [id, w] : roster_.all()) w.in_round = false;
  std::string list;
  for (const auto& slot : plan.slots) {
    ElasticWorker& w = *roster_.on_slot({slot.assignment.host, slot.slot});
    const SlotAssignment& a = slot.assignment;
    rendezvous::Assignment assignment{
        .round = round, .placement = a.placement, .generation = generation_};
    w.rank = a.placement.rank;
    w.round = round;
    w.in_round = true;
    workers_.place(w.id, *w.rank, round);
    board_->assign(w.id, w.entry, assignment);
    w.checkin.reset();
    ++w.entry;
    members_.push_back(w.id);
    list += (list.empty() ? "" : ", ") +
            ("[" + std::to_string(a.placement.rank) + "] worker " + std::to_string(w.id) + " " +
             a.host + ":" + std::to_string(slot.slot));
  }
  // Everyone else alive is out of the job: those checked in hear it now, the others when they
  // check in next.
  for (auto& [id, w] : roster_.all()) {
    if (w.running && !w.leaving && !w.finished && !w.in_round) tell_exit(w);
  }
  checkin_deadline_.reset();
  if (round > 0) server_->clear_scope(rendezvous::round_scope(round - 1));
  announce("round " + std::to_string(round) + " (" + std::to_string(policy_.resets()) +
           (policy_.resets() == 1 ? " reset" : " resets") + "): size " +
           std::to_string(plan.slots.size()) + ": " + list);
  events_.round(round, policy_.resets(), roster_.of(members_));
}

void ElasticJob::finish_when_done() {
  bool members_done = std::all_of(members_.begin(), members_.end(),
                                  [&](int id) { return roster_.find(id)->finished; });
  bool any_running = std::any_of(roster_.all().begin(), roster_.all().end(),
                                 [](const auto& kv) { return kv.second.running; });
  if (!policy_.job_done(members_done, any_running)) return;
  announce("the workers of round " + std::to_string(policy_.round()) +
           " finished; the job is done");
  stop_job(0, "");
}

void ElasticJob::notice_change() {
  if (noticed_round_ == policy_.round()) return;  // its members have been told already
  noticed_round_ = policy_.round();
  ++generation_;
  board_->notice(generation_);
  log::info("published host notice ", generation_);
}

// Members still joining the round stop at once and check in again; members past joining learn
// of the break from their heartbeat instead, so the key is harmless to them.
void ElasticJob::abandon_round(const std::string& why) {
  const int round = policy_.round();
  if (round < 0 || abandoned_round_ == round) return;
  abandoned_round_ = round;
  board_->abandon(round, why);
  log::info("abandoned round ", round, ": ", why);
}

void ElasticJob::tell_exit(ElasticWorker& w) {
  if (w.leaving) return;
  w.leaving = true;
  w.in_round = false;
  board_->tell_exit(w.id, w.entry);
  events_.worker_told_exit(w);
  // One that has not checked in yet may still be finishing a step of its old round.
  w.leave_by = steady_now() + options_.checkin_timeout + options_.term_grace;
  announce(w.name() + " is not in the job any more; told it to exit");
}

void ElasticJob::stop_job(int code, const std::string& why) {
  if (stopping_) return;
  if (!why.empty()) report(why + "; stopping the workers");
  if (!why.empty()) events_.job_stopping(why);
  stopping_ = true;
  exit_code_ = code;
  discovery_.reset();
  for (auto& [id, w] : roster_.all()) {
    // A job that succeeded lets the workers it told to exit leave by themselves (bounded by
    // their leave_by); one that failed stops everyone now.
    if (code == 0 && w.leaving && w.leave_by) continue;
    workers_.stop(id, SIGTERM);
  }
}

}  // namespace

int run_elastic_job(const ElasticJobOptions& options) {
  ElasticJob job(options);
  return job.run();
}

}  // namespace cohort::discovery
