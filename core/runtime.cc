#include "core/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "core/backend_factory.h"
#include "core/coordinator.h"
#include "core/handle_state.h"
#include "core/leader.h"
#include "core/worker.h"
#include "ops/shm_segment.h"

namespace cohort {
namespace {

using std::chrono::milliseconds;

// How long the background thread sleeps when nothing happens; it only bounds how late an abort
// is noticed, since every event (submission, message, shutdown) wakes it at once.
constexpr milliseconds kIdleWake{1000};
// Control rendezvous fields are exchanged as fixed-size blocks over the backend.
constexpr size_t kAddressBlock = 256;
// How long a rank that saw a connection break waits for the heartbeat to say why: the verdict of
// a peer's death or silence reaches every rank within milliseconds of the first break it causes.
constexpr milliseconds kDiagnosisWait{1000};

std::string random_token() {
  std::random_device device;
  std::string token;
  for (int i = 0; i < 4; ++i) token += std::to_string(device());
  return token;
}

// Published by rank 0 instead of a star's address, followed by why the job cannot start.
constexpr std::string_view kRefused = "refused: ";

// Broadcasts a short string from rank 0 through the backend.
std::string broadcast_string(ops::Backend& backend, std::string value) {
  if (value.size() >= kAddressBlock) throw InternalError("control address too long: " + value);
  std::vector<char> block(kAddressBlock, '\0');
  std::memcpy(block.data(), value.data(), value.size());
  backend.broadcast(block.data(), block.size(), 0);
  return block.data();
}

}  // namespace

Runtime::Runtime(const Config& config, Formation formation)
    : config_(config),
      formation_(formation.cancel),
      entry_(formation.entry),
      queue_([this] { control_.wake(); }) {
  fault_point("gloo-store");
  backend_ = make_backend(config_, formation.rendezvous_scope, formation_,
                          [this] { fault_point("gloo-pairs"); });
  backend_name_ = backend_->name();
  // The collectives below (topology, the stars' addresses) wait inside the backend.
  CancelHook abort_backend(
      formation_, [backend = backend_.get()](const std::string& why) { backend->abort(why); });
  compute_topology();
  fault_point("shared-memory");
  use_shared_memory(backend_, config_, topology_, formation_);
  CancelHook abort_shared(
      formation_, [backend = backend_.get()](const std::string& why) { backend->abort(why); });
  // Before the control address is published: the address's broadcast carries a failure instead.
  if (topology_.rank == 0 && !config_.timeline_path.empty()) {
    try {
      timeline_ = Timeline(config_.timeline_path);
    } catch (const InvalidArgument& e) {
      refusal_ = e.what();
    }
  }
  fault_point("control");
  connect_control_channel();
  fault_point("heartbeat");
  ControlChannel beats = connect_star("heartbeat");
  // Rank 0's verdict on a dead leader, the one every rank hears, names the ranks behind it.
  for (const auto& [rank, name] : leader_names_) beats.name_peer(rank, name);
  executor_.emplace(
      std::move(backend_), queue_, timeline_, config_.timeout, config_.device_options(),
      [this](const std::string& local) { return diagnose(local); },
      [this] { fault_point("collective"); });
  role_ = make_role();
  if (topology_.size > 1) {
    heartbeat_.emplace(std::move(beats), topology_.rank, topology_.size, config_.peer_timeout,
                       [this](const std::string& verdict) { on_peer_failure(verdict); });
  }
  throw_if_cancelled(formation_);  // a member left while this rank joined
  formation_ = nullptr;
  thread_ = std::thread([this] { background_loop(); });
  log::debug("rank ", topology_.rank, " of ", topology_.size, " ready on ", backend_name_);
}

Runtime::~Runtime() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    log::error("shutdown failed: ", e.what());
  }
}

void Runtime::fault_point(std::string_view phase) const {
  if (entry_ < 0) return;
  auto known = std::find(std::begin(kFaultPhases), std::end(kFaultPhases), phase);
  int occurrence = 1;
  if (known != std::end(kFaultPhases)) {
    occurrence = ++fault_hits_[static_cast<size_t>(known - std::begin(kFaultPhases))];
  }
  maybe_inject_fault(config_.fault_kill_at, config_.worker_id, phase, entry_, occurrence);
}

void Runtime::compute_topology() {
  int rank = backend_->rank();
  int size = backend_->size();
  if (config_.launcher == Config::Launcher::kCohortrun && config_.hosts_placed) {
    // cohortrun knows which slots share a host, including hosts that are one machine in tests.
    topology_ = config_.placement;
    topology_.rank = rank;
    topology_.size = size;
    return;
  }
  auto hosts = allgather_strings(net::local_host_name());
  topology_ = Placement::from_hosts(rank, hosts);
}

std::unique_ptr<Role> Runtime::make_role() {
  int rank = topology_.rank;
  if (rank == 0) {
    std::vector<int> downstream;
    if (leader_of_.empty()) {
      for (int r = 1; r < topology_.size; ++r) downstream.push_back(r);
    } else {
      downstream = control_peers(0, leader_of_);
    }
    return std::make_unique<Coordinator>(config_, topology_.size, control_, *executor_, timeline_,
                                         std::move(downstream), leader_of_);
  }
  if (leader_of_.empty()) return std::make_unique<Worker>(control_, *executor_);
  if (leader_of_[rank] != rank)
    return std::make_unique<Worker>(control_, *executor_, leader_of_[rank]);
  return std::make_unique<Leader>(config_, rank, control_peers(rank, leader_of_), control_,
                                  *executor_);
}

void Runtime::connect_control_channel() {
  // Every rank decides alike, from every rank's host.
  std::vector<std::string> hosts;
  if (topology_.size > 1 && config_.control_leaders != Config::Hierarchy::kOff) {
    hosts = host_names(*backend_, config_);
  }
  if (leaders_wanted(config_.control_leaders, hosts)) {
    connect_control_leaders(hosts);
  } else {
    control_ = connect_star("control");
  }
  bool one_host = topology_.size > 1 && topology_.local_size == topology_.size;
  if (one_host && config_.shared_memory) share_control_rings();
}

void Runtime::share_control_rings() {
  ops::ShmRendezvous meet;
  if (topology_.rank == 0) meet = ops::ShmRendezvous::random();
  backend_->broadcast(&meet, sizeof meet, 0);
  auto deadline = SteadyClock::now() + config_.timeout;
  size_t bytes = ControlChannel::rings_bytes(topology_.size);
  auto segment = topology_.rank == 0
                     ? ops::ShmSegment::create(meet, topology_.size, bytes, deadline, formation_,
                                               "cohort-control")
                     : ops::ShmSegment::open(meet, topology_.rank, deadline, formation_);
  // Spinning pays only while every rank has a core to spin on; else it takes the core from the
  // rank that would send.
  bool cores_enough = static_cast<unsigned>(topology_.size) <= std::thread::hardware_concurrency();
  control_.use_rings(std::move(segment),
                     cores_enough ? config_.control_spin : std::chrono::microseconds{0});
}

ControlChannel Runtime::connect_star(const std::string& label) {
  std::optional<ControlChannel> star;
  if (topology_.size > 1 && topology_.rank == 0 && refusal_.empty()) {
    try {
      // Refused (too few file descriptors for the star) before the address is published: the
      // other ranks hear why instead of waiting for it.
      star = ControlChannel::listen(config_.hostname, topology_.size, random_token(), label);
    } catch (const InvalidArgument& e) {
      refusal_ = e.what();
    }
  }
  if (!refusal_.empty()) {
    // Rank 0 cannot start: every rank hears why, rather than that rank 0 closed a connection. The
    // block holds 255 bytes; a longer reason reaches the other ranks cut short.
    if (topology_.size > 1) {
      std::string reason = std::string(kRefused) + refusal_;
      broadcast_string(*backend_, reason.substr(0, kAddressBlock - 1));
    }
    throw InvalidArgument(refusal_);
  }
  if (topology_.size == 1) return ControlChannel::alone();
  if (topology_.rank == 0) {
    broadcast_string(*backend_, star->address() + " " + star->token());
    star->accept_workers(config_.timeout, formation_);
    return std::move(*star);
  }
  std::string published = broadcast_string(*backend_, "");
  if (published.starts_with(kRefused)) throw InvalidArgument(published.substr(kRefused.size()));
  auto space = published.find(' ');
  return ControlChannel::connect(topology_.rank, topology_.size, published.substr(0, space),
                                 published.substr(space + 1), config_.timeout, label, formation_);
}

std::vector<std::string> Runtime::allgather_strings(const std::string& block) {
  int size = backend_->size();
  std::vector<char> mine(kAddressBlock, '\0');
  std::memcpy(mine.data(), block.data(), std::min(block.size(), kAddressBlock - 1));
  std::vector<char> all(kAddressBlock * static_cast<size_t>(size));
  std::vector<size_t> counts(static_cast<size_t>(size), kAddressBlock);
  backend_->allgatherv(mine.data(), all.data(), counts);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + r * kAddressBlock);
  return out;
}

void Runtime::connect_control_leaders(const std::vector<std::string>& hosts) {
  int rank = topology_.rank;
  leader_of_ = host_leaders(hosts);
  int leader = leader_of_[rank];
  std::optional<ControlChannel> hub;
  if (leader == rank && refusal_.empty()) {
    try {
      hub = ControlChannel::listen(config_.hostname, topology_.size, random_token(), "control",
                                   static_cast<int>(control_peers(rank, leader_of_).size()));
    } catch (const InvalidArgument& e) {
      refusal_ = e.what();
    }
  }
  std::string mine = hub ? hub->address() + " " + hub->token() : "";
  if (!refusal_.empty()) mine = (std::string(kRefused) + refusal_).substr(0, kAddressBlock - 1);
  auto published = allgather_strings(mine);
  for (const auto& p : published) {
    if (p.starts_with(kRefused)) throw InvalidArgument(p.substr(kRefused.size()));
  }
  auto address = [&](int r) { return published[r].substr(0, published[r].find(' ')); };
  auto token = [&](int r) { return published[r].substr(published[r].find(' ') + 1); };
  // Which way this rank's control channel goes, with the hosts it was grouped by.
  std::string here = "control: rank " + std::to_string(rank) + " on host " + hosts[rank] + ": ";
  if (leader != rank) {
    control_ = ControlChannel::connect(rank, topology_.size, address(leader), token(leader),
                                       config_.timeout, "control", formation_, leader);
    control_.name_peer(
        leader, "rank " + std::to_string(leader) + ", this host's leader at " + address(leader));
    log::debug(here, "through rank ", leader, ", this host's leader at ", address(leader));
    return;
  }
  auto peers = control_peers(rank, leader_of_);
  hub->expect(peers);
  if (rank != 0) hub->connect_up(rank, address(0), token(0), config_.timeout, formation_);
  hub->accept_workers(config_.timeout, formation_);
  for (int p : peers) {
    if (leader_of_[p] != p) continue;
    leader_names_.emplace_back(p, "rank " + std::to_string(p) + ", the leader of host " + hosts[p] +
                                      " (" + describe_ranks(led_by(p, leader_of_)) + ")");
  }
  for (const auto& [p, name] : leader_names_) hub->name_peer(p, name);
  log::debug(here, "leading ", peers.size(), " rank(s) connected here (",
             peers.empty() ? "none" : describe_ranks(peers), ")");
  control_ = std::move(*hub);
}

Handle Runtime::submit(Request request, Tensor input, Tensor output) {
  return submit(TensorEntry{std::move(request), std::move(input), std::move(output), nullptr, {}});
}

Handle Runtime::submit(TensorEntry entry) {
  if (shutdown_requested_) throw ShutdownError("cohort has been shut down on this rank");
  check_process_set(entry.request);
  auto state = std::make_shared<detail::HandleState>(entry.request.name);
  entry.handle = state;
  queue_.add(std::move(entry));
  return Handle(state);
}

std::vector<int> Runtime::process_set_ranks(int id) const {
  auto members = executor_->members(id);
  if (!members && executor_->was_removed(id)) {
    throw InvalidArgument("process set " + std::to_string(id) +
                          " was removed (remove_process_set)");
  }
  if (!members) throw InvalidArgument("process set " + std::to_string(id) + " does not exist");
  return *members;
}

void Runtime::check_process_set(const Request& request) const {
  if (request.process_set == 0) return;
  auto members = process_set_ranks(request.process_set);
  std::string what = std::string(to_string(request.type)) + " '" + request.name + "': ";
  if (!std::binary_search(members.begin(), members.end(), topology_.rank)) {
    throw InvalidArgument(what + "rank " + std::to_string(topology_.rank) +
                          " is not a member of process set " + std::to_string(request.process_set));
  }
  if (request.type == OpType::kBroadcast &&
      !std::binary_search(members.begin(), members.end(), request.root)) {
    throw InvalidArgument(what + "root rank " + std::to_string(request.root) +
                          " is not a member of process set " + std::to_string(request.process_set));
  }
}

bool Runtime::defunct() const {
  if (executor_ && executor_->peer_shut_down()) return true;
  MutexLock lock(finished_mutex_);
  return finished_;
}

void Runtime::shutdown() {
  if (!thread_.joinable()) return;
  shutdown_requested_ = true;
  control_.wake();
  {
    MutexLock lock(finished_mutex_);
    if (!finished_cv_.wait_for(finished_mutex_, config_.shutdown_timeout,
                               [&]() REQUIRES(finished_mutex_) { return finished_; })) {
      log::warning("shutdown: the other ranks did not all shut down within ",
                   config_.shutdown_timeout.count() / 1000.0,
                   " s (COHORT_SHUTDOWN_TIMEOUT_SECONDS); leaving without them");
      abort_ = true;
      control_.wake();
    }
  }
  thread_.join();
  if (heartbeat_) heartbeat_->stop();
  queue_.close(std::make_exception_ptr(ShutdownError("cohort has been shut down on this rank")));
}

void Runtime::abandon(const std::string& reason) {
  abandoned_ = true;
  // A failure, not a goodbye: the peers hear why, and the heartbeat thread ends.
  if (heartbeat_) heartbeat_->fail(reason);
  if (thread_.joinable()) {
    abort_ = true;
    control_.wake();
    thread_.join();
  }
  if (heartbeat_) heartbeat_->stop();
  // The background thread is gone: its connections and queue are this thread's now.
  tear_down_connections();
  queue_.close(std::make_exception_ptr(InternalError(reason)));
}

void Runtime::finish(std::exception_ptr error) {
  if (error) queue_.close(error);
  {
    MutexLock lock(finished_mutex_);
    finished_ = true;
  }
  finished_cv_.notify_all();
}

void Runtime::background_loop() {
  try {
    bool done = false;
    while (!done && !abort_) {
      if (auto verdict = heartbeat_ ? heartbeat_->verdict() : std::nullopt) {
        throw InternalError(*verdict);
      }
      auto messages = control_.wait(wait_timeout());
      auto fresh = collect_if_due();
      bool last = role_->step(std::move(messages), std::move(fresh), shutdown_requested_);
      MutexLock lock(finished_mutex_);
      finished_ = finished_ || last;
      done = finished_;
    }
    finish(nullptr);
  } catch (const InternalError& e) {
    fail(diagnose(e.what()));
  } catch (const std::exception& e) {
    fail(std::string("background thread failed: ") + e.what());
  } catch (...) {
    fail("background thread failed with an exception of unknown type");
  }
}

void Runtime::on_peer_failure(const std::string& verdict) {
  // The background thread may be blocked in a collective: interrupt it, then wake it in case it
  // is waiting for messages instead. It then fails everything with the verdict.
  executor_->abort(verdict);
  control_.wake();
}

std::string Runtime::diagnose(const std::string& local) {
  if (!heartbeat_) return local;
  auto verdict = heartbeat_->verdict(kDiagnosisWait);
  if (!verdict || *verdict == local) return local;
  log::info("seen here as: ", local);
  return *verdict;
}

void Runtime::fail(const std::string& reason) {
  if (abandoned_) {
    log::debug("while abandoning the runtime: ", reason);
  } else if (!heartbeat_ || heartbeat_->verdict() != reason) {
    log::error(reason);  // a verdict of the heartbeat's own was logged when it came
  }
  // The heartbeat tells the peers why before the connections below close under them.
  if (heartbeat_) heartbeat_->fail(reason);
  role_->on_fail(reason);
  tear_down_connections();
  finish(std::make_exception_ptr(InternalError(reason)));
}

void Runtime::tear_down_connections() {
  // Closing at once turns this rank's failure into an immediate error on its peers (a closed
  // socket), rather than a data-plane timeout on each of them.
  control_.close_peers();
  executor_->close();
}

std::optional<Runtime::Clock::time_point> Runtime::collect_time() {
  auto arrivals = queue_.new_request_arrivals();
  if (!arrivals) return std::nullopt;
  // A request on its own, with nothing else in flight, goes at once: a training loop that waits
  // for each collective before the next would otherwise pay the burst's wait every time.
  if (arrivals->alone) return arrivals->first;
  // A burst of submissions is collected once it pauses, or one cycle after it began.
  return std::min(arrivals->first + config_.cycle_time, arrivals->last + config_.cycle_time / 10);
}

std::vector<Request> Runtime::collect_if_due() {
  auto due = collect_time();
  if (!due || (*due > Clock::now() && !shutdown_requested_)) return {};
  auto fresh = queue_.take_new_requests();
  for (const auto& request : fresh) {
    if (request.type == OpType::kJoin) executor_->mark_joined();
  }
  return fresh;
}

std::chrono::microseconds Runtime::wait_timeout() {
  std::chrono::microseconds timeout = role_->wait_timeout(kIdleWake);
  if (auto due = collect_time()) {
    auto until = std::chrono::duration_cast<std::chrono::microseconds>(*due - Clock::now());
    timeout = std::clamp(until, std::chrono::microseconds(0), timeout);
  }
  return timeout;
}

}  // namespace cohort
