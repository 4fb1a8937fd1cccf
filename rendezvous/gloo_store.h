// Gloo's rendezvous store over a Store, so that Gloo builds its connections through the job's
// authenticated store:
//
//   RendezvousClient client(addr, port, secret, 30s, scope);
//   GlooStore store(client, 30s);
//   ops::make_gloo_backend(options, store);
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/cancellation.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

// `store` (and `cancel`, if given) must outlive it. get() and wait() wait at most `timeout`
// (wait(keys, timeout) uses its own) and then throw RendezvousTimeout; with `cancel` every call
// ends at once when it fires.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(cohort::rendezvous::Store& store, std::chrono::milliseconds timeout,
            const Cancellation* cancel = nullptr)
      : store_(store), timeout_(timeout), cancel_(cancel) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  cohort::rendezvous::Store& store_;  // not the base class: Gloo's Store
  std::chrono::milliseconds timeout_;
  const Cancellation* cancel_;
};

}  // namespace cohort::rendezvous
