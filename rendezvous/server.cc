#include "rendezvous/server.h"

#include <algorithm>

#include "base/log.h"
#include "rendezvous/server_loop.h"

namespace cohort::rendezvous {
namespace {

std::string parked_key(const std::string& scope, const std::string& key) {
  return scope + '\0' + key;
}

}  // namespace

RendezvousServer::RendezvousServer(const std::string& host, std::string secret,
                                   RendezvousServerOptions options)
    : secret_(std::move(secret)), options_(std::move(options)) {
  if (options_.max_unauthenticated < 1 || options_.max_unauthenticated_per_address < 1 ||
      options_.max_connections < 1) {
    throw InvalidArgument(
        "rendezvous server: max_connections, max_unauthenticated and "
        "max_unauthenticated_per_address must be at least 1");
  }
  loop_ = std::make_unique<ServerLoop>(*this, host, options_);
  port_ = loop_->port();
  thread_ = std::thread([this] { loop_->run(); });
}

RendezvousServer::~RendezvousServer() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void RendezvousServer::stop() {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    changed_.notify_all();
  }
  loop_->stop();
}

bool RendezvousServer::stopping() const {
  MutexLock lock(mutex_);
  return stopping_;
}

void RendezvousServer::clear_scope(const std::string& scope) {
  MutexLock lock(mutex_);
  scopes_.erase(scope);
}

void RendezvousServer::set(const std::string& key, const std::string& value,
                           const std::string& scope) {
  bool woke = false;
  {
    MutexLock lock(mutex_);
    set_locked(scope, key, value);
    woke = !woken_.empty();
  }
  if (woke) loop_->wake();
}

std::optional<std::string> RendezvousServer::lookup(const std::string& key,
                                                    const std::string& scope) const {
  MutexLock lock(mutex_);
  return find_locked(scope, key);
}

std::string RendezvousServer::get(const std::string& key, const std::string& scope,
                                  std::chrono::milliseconds wait, const Cancellation* cancel) {
  // Declared before the lock, so that it is removed after the lock is released: the hook takes
  // the lock to wake this wait.
  CancelHook hook(cancel, [this](const std::string&) {
    MutexLock lock(mutex_);
    changed_.notify_all();
  });
  MutexLock lock(mutex_);
  auto cancelled = [cancel] { return cancel && cancel->cancelled(); };
  std::optional<std::string> value;
  changed_.wait_for(mutex_, wait, [&]() REQUIRES(mutex_) {
    value = find_locked(scope, key);
    return value || stopping_ || cancelled();
  });
  bool stopping = stopping_;
  lock.unlock();
  throw_if_cancelled(cancel);
  if (value) return *value;
  if (stopping) throw Error("the rendezvous server is stopping");
  throw RendezvousTimeout("key '" + key + "' was not set within " + std::to_string(wait.count()) +
                          " ms");
}

bool RendezvousServer::compare_and_set(const std::string& key,
                                       const std::optional<std::string>& expected,
                                       const std::string& desired, const std::string& scope) {
  bool matched = false, woke = false;
  {
    MutexLock lock(mutex_);
    matched = compare_and_set_locked({.op = RendezvousOp::kCompareSet,
                                      .scope = scope,
                                      .key = key,
                                      .value = desired,
                                      .expected = expected});
    woke = !woken_.empty();
  }
  if (woke) loop_->wake();
  return matched;
}

bool RendezvousServer::remove(const std::string& key, const std::string& scope) {
  MutexLock lock(mutex_);
  return remove_locked(scope, key);
}

std::optional<std::string> RendezvousServer::find_locked(const std::string& scope,
                                                         const std::string& key) const {
  auto it = scopes_.find(scope);
  if (it == scopes_.end()) return std::nullopt;
  auto value = it->second.find(key);
  if (value == it->second.end()) return std::nullopt;
  return value->second;
}

void RendezvousServer::set_locked(const std::string& scope, const std::string& key,
                                  const std::string& value) {
  scopes_[scope][key] = value;
  if (auto it = parked_.find(parked_key(scope, key)); it != parked_.end()) {
    woken_.insert(woken_.end(), it->second.begin(), it->second.end());
    parked_.erase(it);
  }
  changed_.notify_all();
}

bool RendezvousServer::compare_and_set_locked(const RendezvousRequest& r) {
  auto current = find_locked(r.scope, r.key);
  if (current == r.value) return true;  // idempotent: a client's retry of one that matched
  if (current != r.expected) return false;
  set_locked(r.scope, r.key, r.value);
  return true;
}

bool RendezvousServer::remove_locked(const std::string& scope, const std::string& key) {
  auto it = scopes_.find(scope);
  return it != scopes_.end() && it->second.erase(key) > 0;
}

int RendezvousServer::rejected() const {
  MutexLock lock(mutex_);
  return rejected_;
}

int RendezvousServer::authenticated() const {
  MutexLock lock(mutex_);
  return authenticated_;
}

void RendezvousServer::count_authenticated(int delta) {
  MutexLock lock(mutex_);
  authenticated_ += delta;
  changed_.notify_all();
}

bool RendezvousServer::await_rejected(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return rejected_ >= n; });
}

bool RendezvousServer::await_authenticated_at_most(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return authenticated_ <= n; });
}

bool RendezvousServer::contains(const std::string& key, const std::string& scope) const {
  MutexLock lock(mutex_);
  auto it = scopes_.find(scope);
  return it != scopes_.end() && it->second.contains(key);
}

bool RendezvousServer::await_waiting_gets(int n, std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  return changed_.wait_for(mutex_, timeout, [&]() REQUIRES(mutex_) { return waiting_gets_ >= n; });
}

void RendezvousServer::reject(const std::string& peer, const std::string& reason) {
  MutexLock lock(mutex_);
  if (stopping_) return;  // connections cut by stop() are not attacks
  ++rejected_;
  changed_.notify_all();
  // The peer gets no answer (but a stale one: the loop's answer_stale) and no second try on this
  // connection. Rate-limited: a peer without the secret can cause these lines at will.
  log::limited(log::Level::kWarning, "rendezvous-rejected", "rendezvous: rejected ", peer, ": ",
               reason);
}

void RendezvousServer::check_fresh(int64_t timestamp_ms, const std::string& nonce,
                                   const std::string& what) {
  if (auto stale = outside_replay_window(timestamp_ms))
    throw RendezvousRejected("stale " + what + ": " + *stale);
  int64_t now = unix_millis();
  int64_t window = std::chrono::milliseconds(kReplayWindow).count();
  MutexLock lock(mutex_);
  // Nonces older than the window can be forgotten: their requests are rejected as stale anyway.
  // Swept at most once a second, so that a round of thousands of requests costs each one O(1).
  if (now - nonces_swept_at_ >= 1000) {
    std::erase_if(seen_nonces_, [&](const auto& kv) { return now - kv.second > window; });
    nonces_swept_at_ = now;
  }
  if (!seen_nonces_.emplace(nonce, timestamp_ms).second) {
    throw RendezvousRejected("replayed " + what + " (nonce already used)");
  }
}

std::optional<RendezvousResponse> RendezvousServer::handle(const RendezvousRequest& request,
                                                           int64_t connection) {
  MutexLock lock(mutex_);
  if (stopping_) {
    return RendezvousResponse{.nonce = request.nonce,
                              .status = RendezvousStatus::kStopping,
                              .value = "the rendezvous server is stopping"};
  }
  RendezvousResponse ok{.nonce = request.nonce, .status = RendezvousStatus::kOk};
  RendezvousResponse mismatch{.nonce = request.nonce, .status = RendezvousStatus::kMismatch};
  switch (request.op) {
    case RendezvousOp::kGet:
      if (auto value = find_locked(request.scope, request.key)) {
        ok.value = *value;
        return ok;
      }
      if (request.timeout_ms <= 0) return get_timeout(request);
      parked_[parked_key(request.scope, request.key)].push_back(connection);
      ++waiting_gets_;
      changed_.notify_all();
      return std::nullopt;
    case RendezvousOp::kSet:
      set_locked(request.scope, request.key, request.value);
      return ok;
    case RendezvousOp::kCompareSet:
      return compare_and_set_locked(request) ? ok : mismatch;
    case RendezvousOp::kRemove:
      return remove_locked(request.scope, request.key) ? ok : mismatch;
  }
  return mismatch;  // open_request admits no other operation
}

std::optional<RendezvousResponse> RendezvousServer::answer_parked(const RendezvousRequest& request,
                                                                  int64_t connection,
                                                                  bool expired) {
  MutexLock lock(mutex_);
  auto value = find_locked(request.scope, request.key);
  if (!value && !expired && !stopping_) {
    // Woken for a key that was removed again, or cleared with its scope: it waits on.
    auto& waiting = parked_[parked_key(request.scope, request.key)];
    if (std::find(waiting.begin(), waiting.end(), connection) == waiting.end()) {
      waiting.push_back(connection);
    }
    return std::nullopt;
  }
  lock.unlock();
  unpark(request, connection);
  if (value) return RendezvousResponse{.nonce = request.nonce, .value = *value};
  if (stopping()) {
    return RendezvousResponse{.nonce = request.nonce,
                              .status = RendezvousStatus::kStopping,
                              .value = "the rendezvous server is stopping"};
  }
  return get_timeout(request);
}

void RendezvousServer::unpark(const RendezvousRequest& request, int64_t connection) {
  MutexLock lock(mutex_);
  if (auto it = parked_.find(parked_key(request.scope, request.key)); it != parked_.end()) {
    std::erase(it->second, connection);
    if (it->second.empty()) parked_.erase(it);
  }
  --waiting_gets_;
  changed_.notify_all();
}

std::vector<int64_t> RendezvousServer::take_woken() {
  MutexLock lock(mutex_);
  return std::exchange(woken_, {});
}

RendezvousResponse RendezvousServer::get_timeout(const RendezvousRequest& request) const {
  auto wait = std::min(std::chrono::milliseconds(std::max<int64_t>(request.timeout_ms, 0)),
                       options_.max_get_wait);
  RendezvousResponse response{.nonce = request.nonce, .status = RendezvousStatus::kTimeout};
  response.value =
      "key '" + request.key + "' was not set within " + std::to_string(wait.count()) + " ms";
  if (wait.count() < request.timeout_ms) response.value += " (the server's limit)";
  return response;
}

}  // namespace cohort::rendezvous
