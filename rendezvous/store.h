// The key-value store through which a job's processes meet: workers publish their addresses and
// check in, the launcher answers with assignments. One interface, so that the launcher's built-in
// server (RendezvousServer, reached over the network by RendezvousClient or in process by
// RendezvousServer::store) and other stores (etcd) are interchangeable for core, elastic and the
// launcher. A Store sees one scope of keys: a round's, or the job's elastic protocol's.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "cohort/errors.h"

namespace cohort::rendezvous {

// A store that cannot be reached throws cohort::StoreUnreachable (cohort/errors.h).
using cohort::StoreUnreachable;

// Every call throws StoreUnreachable naming the store (describe()) when the store cannot be
// reached, another cohort::Error when it answers wrongly or refuses, and InternalError with the
// cancellation's reason when `cancel` fires.
class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` and wakes every get() waiting for it.
  virtual void set(const std::string& key, const std::string& value,
                   const Cancellation* cancel = nullptr) = 0;

  // The value of `key`, waiting up to `wait` for it to be set (a long poll: nobody polls); throws
  // RendezvousTimeout (rendezvous/protocol.h) when it is not set by then.
  virtual std::string get(const std::string& key, std::chrono::milliseconds wait,
                          const Cancellation* cancel = nullptr) = 0;

  // The value of `key` now, without waiting.
  virtual std::optional<std::string> lookup(const std::string& key,
                                            const Cancellation* cancel = nullptr) = 0;

  // Sets `key` to `desired` if its value is `expected` (nullopt: if it is not set), atomically.
  // True if the key holds `desired` afterwards, having held `expected` or already `desired`: so
  // a request sent again after a lost answer gets the same result, and a value that identifies
  // the caller (an election) tells it whether it won.
  virtual bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                               const std::string& desired,
                               const Cancellation* cancel = nullptr) = 0;

  // Removes `key`; true if it was set.
  virtual bool remove(const std::string& key, const Cancellation* cancel = nullptr) = 0;

  // What this store is, for messages: "rendezvous server 10.0.0.1:41234".
  virtual std::string describe() const = 0;

  // Waits until every one of `keys` is set, all within `wait` (RendezvousTimeout otherwise).
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds wait,
            const Cancellation* cancel = nullptr);
};

}  // namespace cohort::rendezvous
