// A lease on etcd that a thread of its own keeps alive: the keys put under it (an agent's
// registration, a planner's claim on a round) vanish when this process dies, or when etcd
// hears from it for no whole TTL, which is how the other agents learn that it is gone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "base/cancellation.h"
#include "base/mutex.h"
#include "rendezvous/etcd_client.h"

namespace cohort::rendezvous {

class EtcdLease {
 public:
  // Called once, on the lease's thread, when etcd says the lease is gone (expired, or revoked by
  // someone else) or refuses to renew it, with the reason. Must be quick. While etcd cannot be
  // reached (StoreUnreachable) the lease is only renewed again and again: whether it outlived the
  // outage is etcd's to say once it answers.
  using OnLost = std::function<void(const std::string& reason)>;

  // Grants a lease of `ttl` (whole seconds, at least 1; etcd may grant more) and starts renewing
  // it every third of the TTL granted. Throws cohort::Error naming etcd when the grant fails.
  // `etcd.interrupt_fd` ends the requests made on the caller's thread (the grant, alive(), the
  // revocation), never the renewals on the lease's own thread.
  EtcdLease(EtcdOptions etcd, std::chrono::seconds ttl, OnLost on_lost);
  // Stops renewing and revokes the lease (best effort: unrevoked, it expires within the TTL; the
  // interrupt descriptor ends the revocation too).
  ~EtcdLease();
  EtcdLease(const EtcdLease&) = delete;
  EtcdLease& operator=(const EtcdLease&) = delete;

  int64_t id() const { return id_; }
  std::chrono::seconds ttl() const { return ttl_; }
  bool lost() const;
  // Renews the lease now and says whether etcd still holds it (false: expired or revoked, even if
  // etcd has not deleted its keys yet). Throws StoreUnreachable when etcd cannot be reached. Any
  // thread.
  bool alive();

 private:
  void keep_alive();
  void lose(const std::string& reason);

  // One renewal through `client`; the TTL etcd still gives the lease (0: it has expired).
  int64_t renew(const EtcdClient& client);

  EtcdClient client_;         // the caller's thread: the grant, alive()
  EtcdClient renew_client_;   // the lease's thread: never interrupted
  EtcdClient revoke_client_;  // its requests last at most a TTL
  std::chrono::seconds ttl_;  // as etcd granted it
  OnLost on_lost_;
  int64_t id_ = 0;
  mutable Mutex mutex_;
  CondVar stop_cv_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  Cancellation stop_;  // ends a renewal in flight when the lease is revoked
  bool lost_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace cohort::rendezvous
