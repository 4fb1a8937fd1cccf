#include "core/runtime.h"

#include <unistd.h>

#include <cstring>
#include <random>

#include "base/log.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "core/backend_factory.h"
#include "core/handle_state.h"

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
  if (topology_.rank == 0) {
    cache_.emplace(config_.cache_capacity, topology_.size);
    negotiator_.emplace(topology_.size, &*cache_);
  }
  executor_.emplace(std::move(backend_), queue_, timeline_, config_.timeout,
                    [this](const std::string& local) { return diagnose(local); });
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
  if (entry_ >= 0) maybe_inject_fault(config_.fault_kill_at, config_.worker_id, phase, entry_);
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
  std::vector<char> mine(kAddressBlock, '\0');
  std::string host = net::local_host_name();
  std::memcpy(mine.data(), host.data(), std::min(host.size(), kAddressBlock - 1));
  std::vector<char> all(kAddressBlock * size);
  std::vector<size_t> counts(size, kAddressBlock);
  backend_->allgatherv(mine.data(), all.data(), counts);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + r * kAddressBlock);
  topology_ = Placement::from_hosts(rank, hosts);
}

void Runtime::connect_control_channel() {
  control_ = connect_star("control");
}

ControlChannel Runtime::connect_star(const std::string& label) {
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
    std::string token = random_token();
    auto star = ControlChannel::listen(config_.hostname, topology_.size, token, label);
    broadcast_string(*backend_, star.address() + " " + token);
    star.accept_workers(config_.timeout, formation_);
    return star;
  }
  std::string published = broadcast_string(*backend_, "");
  if (published.starts_with(kRefused)) throw InvalidArgument(published.substr(kRefused.size()));
  auto space = published.find(' ');
  return ControlChannel::connect(topology_.rank, topology_.size, published.substr(0, space),
                                 published.substr(space + 1), config_.timeout, label, formation_);
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

void Runtime::shutdown() {
  if (!thread_.joinable()) return;
  shutdown_requested_ = true;
  control_.wake();
  {
    std::unique_lock lock(finished_mutex_);
    if (!finished_cv_.wait_for(lock, config_.shutdown_timeout, [&] { return finished_; })) {
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
    std::lock_guard lock(finished_mutex_);
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
      if (topology_.rank == 0) {
        coordinator_step(std::move(messages), std::move(fresh));
      } else {
        worker_step(std::move(messages), std::move(fresh));
      }
      std::lock_guard lock(finished_mutex_);
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
  if (topology_.rank == 0) announce_abort(reason);
  tear_down_connections();
  finish(std::make_exception_ptr(InternalError(reason)));
}

void Runtime::announce_abort(const std::string& reason) {
  // Best effort: a peer that is gone or slow learns from the closed connection instead.
  ResponseList notice{.abort_reason = "rank 0 aborted the job: " + reason};
  auto bytes = encode(notice);
  for (int peer = 1; peer < topology_.size; ++peer) {
    try {
      control_.send(peer, bytes);
    } catch (const InternalError&) {
    }
  }
  try {
    control_.flush(std::chrono::milliseconds(100));
  } catch (const InternalError&) {
  }
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

void Runtime::coordinator_step(std::vector<ControlMessage> messages, std::vector<Request> fresh) {
  Negotiator& negotiator = *negotiator_;
  for (auto& request : fresh) negotiate(0, std::move(request));
  if (shutdown_requested_ && !shutdown_announced_) {
    negotiator.mark_shut_down(0);
    shutdown_announced_ = true;
  }
  for (auto& message : messages) {
    RequestList list = decode_request_list(message.payload);
    cache_->acknowledge(message.peer, list.applied);
    for (uint32_t hit : list.hits) negotiate(message.peer, cached_request(hit));
    for (auto& request : list.requests) negotiate(message.peer, std::move(request));
    if (list.shutdown) negotiator.mark_shut_down(message.peer);
  }
  ResponseList out{negotiator.take_ready(config_.fusion_threshold), negotiator.all_shut_down()};
  inspect_stalls(out.responses);
  for (const auto& response : out.responses) {
    for (const auto& name : response.names) timeline_.negotiation_ended(name);
  }
  if (out.responses.empty() && !out.shutdown) return;
  out.evicted = cache_->take_evicted();
  cache_->sent(++sent_lists_);
  auto bytes = encode(out);
  for (int peer = 1; peer < topology_.size; ++peer) control_.send(peer, bytes);
  // Every rank needs the whole list before it can join the collectives in it.
  control_.flush(config_.timeout);
  execute(out);
}

Request Runtime::cached_request(uint32_t hit) const {
  const Request* cached = cache_->find(hit >> 1);
  if (!cached) {
    throw InternalError("a rank referred to cached tensor id " + std::to_string(hit >> 1) +
                        ", which rank 0 does not know");
  }
  Request request = *cached;
  request.buffer_changed = (hit & 1) != 0;
  return request;
}

void Runtime::negotiate(int rank, Request request) {
  std::string name = request.name;
  std::string_view op = to_string(request.type);
  int submitted = negotiator_->add(rank, std::move(request));
  if (submitted == 1) timeline_.negotiation_started(name, op);
  timeline_.rank_ready(name, rank);
}

std::chrono::microseconds Runtime::wait_timeout() {
  std::chrono::microseconds timeout = kIdleWake;
  if (topology_.rank == 0) {
    // Rank 0 must wake often enough to inspect stalls on time even when nothing arrives.
    if (config_.stall_check)
      timeout = std::min<std::chrono::microseconds>(timeout, config_.stall_check_time / 2);
    if (config_.stall_shutdown_time.count() > 0) {
      timeout = std::min<std::chrono::microseconds>(timeout, config_.stall_shutdown_time / 4);
    }
    timeout = std::max<std::chrono::microseconds>(timeout, milliseconds(1));
  }
  if (auto due = collect_time()) {
    auto until = std::chrono::duration_cast<std::chrono::microseconds>(*due - Clock::now());
    timeout = std::clamp(until, std::chrono::microseconds(0), timeout);
  }
  return timeout;
}

void Runtime::inspect_stalls(std::vector<Response>& responses) {
  auto now = std::chrono::steady_clock::now();
  if (config_.stall_shutdown_time.count() > 0) {
    for (auto& r : negotiator_->expire_stalled(now, config_.stall_shutdown_time)) {
      log::error(r.error);
      responses.push_back(std::move(r));
    }
  }
  if (!config_.stall_check) return;
  if (next_stall_check_ == std::chrono::steady_clock::time_point{}) {
    next_stall_check_ = now + config_.stall_check_time;
  }
  if (now < next_stall_check_) return;
  next_stall_check_ = now + config_.stall_check_time;
  std::string report = negotiator_->stall_report(now, config_.stall_check_time);
  if (!report.empty()) log::warning("stall inspector: ", report);
}

void Runtime::worker_step(std::vector<ControlMessage> messages, std::vector<Request> fresh) {
  RequestList list;
  list.applied = applied_lists_;
  for (auto& request : fresh) {
    if (auto id = cache_view_.hit(request)) {
      list.hits.push_back((*id << 1) | (request.buffer_changed ? 1 : 0));
    } else {
      cache_view_.sent_in_full(request);
      list.requests.push_back(std::move(request));
    }
  }
  if (shutdown_requested_ && !shutdown_announced_) {
    list.shutdown = true;
    shutdown_announced_ = true;
  }
  if (!list.requests.empty() || !list.hits.empty() || list.shutdown) {
    control_.send(0, encode(list));
  }
  for (auto& message : messages) {
    ResponseList responses = decode_response_list(message.payload);
    if (!responses.abort_reason.empty()) throw InternalError(responses.abort_reason);
    cache_view_.apply(responses);
    execute(responses);
    ++applied_lists_;
    if (responses.shutdown) break;
  }
}

void Runtime::execute(const ResponseList& list) {
  for (const auto& response : list.responses) executor_->execute(response);
  if (!list.shutdown) return;
  // A rank that closed its connections while a peer still sends the tail of the last collective
  // would fail that peer: leave only once every rank is done.
  executor_->world().barrier();
  std::lock_guard lock(finished_mutex_);
  finished_ = true;
}

}  // namespace cohort
