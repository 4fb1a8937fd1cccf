#include "rendezvous/etcd_lease.h"

#include <algorithm>

#include "base/log.h"
#include "cohort/errors.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

namespace {

// The revocation is a courtesy (the lease expires within its TTL anyway): it may not hold up the
// end of a process whose etcd is unreachable for longer than that.
EtcdOptions bounded(EtcdOptions etcd, std::chrono::seconds ttl) {
  etcd.timeout = std::min<std::chrono::milliseconds>(etcd.timeout, ttl);
  return etcd;
}

EtcdOptions uninterrupted(EtcdOptions etcd) {
  etcd.interrupt_fd = -1;
  return etcd;
}

}  // namespace

EtcdLease::EtcdLease(EtcdOptions etcd, std::chrono::seconds ttl, OnLost on_lost)
    : client_(etcd),
      renew_client_(uninterrupted(etcd)),
      revoke_client_(bounded(std::move(etcd), ttl)),
      ttl_(ttl),
      on_lost_(std::move(on_lost)) {
  if (ttl_.count() < 1) throw InvalidArgument("etcd lease: the TTL must be at least 1 s");
  auto answer = client_.call("/v3/lease/grant", {{"TTL", std::to_string(ttl_.count())}});
  id_ = json_integer(answer, "ID");
  int64_t granted = json_integer(answer, "TTL");
  if (id_ == 0 || granted < 1) {
    throw Error(client_.describe() + ": /v3/lease/grant gave no lease: " + answer.dump());
  }
  if (granted != ttl_.count()) {
    // etcd raises TTLs below its minimum (2 s with the default election timeout).
    log::info("etcd lease ", id_, ": asked for a TTL of ", ttl_.count(), " s, etcd gave ", granted,
              " s");
    ttl_ = std::chrono::seconds(granted);
  }
  thread_ = std::thread([this] { keep_alive(); });
}

EtcdLease::~EtcdLease() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  stop_.cancel("the lease is being revoked");
  thread_.join();
  try {
    revoke_client_.call("/v3/lease/revoke", {{"ID", std::to_string(id_)}});
  } catch (const Error& e) {
    log::debug("etcd lease ", id_, " not revoked (it expires within ", ttl_.count(),
               " s): ", e.what());
  }
}

bool EtcdLease::lost() const {
  MutexLock lock(mutex_);
  return lost_;
}

bool EtcdLease::alive() {
  return renew(client_) > 0;
}

int64_t EtcdLease::renew(const EtcdClient& client) {
  auto answer = client.call("/v3/lease/keepalive", {{"ID", std::to_string(id_)}}, &stop_);
  return json_integer(answer.value("result", nlohmann::json::object()), "TTL");
}

void EtcdLease::lose(const std::string& reason) {
  {
    MutexLock lock(mutex_);
    lost_ = true;
  }
  log::warning("etcd lease ", id_, " lost: ", reason);
  if (on_lost_) on_lost_(reason);
}

// Renews every third of the TTL, so that two renewals in a row may fail (a slow or restarting
// etcd member) before the lease can expire. An etcd that cannot be reached is tried again and
// again: a cluster that restarts keeps its leases (the new leader gives each its TTL afresh), so
// only etcd itself can say that the lease is gone. An error that etcd answers is not retried.
void EtcdLease::keep_alive() {
  using Clock = std::chrono::steady_clock;
  auto renewed = Clock::now();
  bool warned = false;
  MutexLock lock(mutex_);
  while (!stop_cv_.wait_for(mutex_, ttl_ / 3, [&]() REQUIRES(mutex_) { return stopping_; })) {
    lock.unlock();
    try {
      if (renew(renew_client_) <= 0) return lose("etcd says it has expired");
      renewed = Clock::now();
      if (warned) log::warning("etcd lease ", id_, " renewed again");
      warned = false;
    } catch (const StoreUnreachable& e) {
      if (stop_.cancelled()) return;
      if (!warned && Clock::now() - renewed >= ttl_) {
        log::warning("etcd lease ", id_, " not renewed for a whole TTL; still trying: ", e.what());
        warned = true;
      }
    } catch (const Error& e) {
      // etcd answered, with an error: no outage to wait out, and no renewal to count on.
      if (stop_.cancelled()) return;
      return lose(std::string("renewing it failed: ") + e.what());
    }
    lock.lock();
  }
}

}  // namespace cohort::rendezvous
