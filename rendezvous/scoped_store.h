// A Store (store.h) that sees one scope of another store: every key it is given lives at
// "<scope>/<key>" there. Agent mode's launcher side of the elastic protocol uses it to see the
// protocol's keys ("elastic/...") inside its job's etcd store, as the workers see them in theirs;
// values stay sealed by the store underneath, for the full key, exactly as they would be written
// through it directly.
#pragma once

#include <string>

#include "rendezvous/store.h"

namespace cohort::rendezvous {

class ScopedStore final : public Store {
 public:
  // `store` must outlive this one.
  ScopedStore(Store& store, std::string scope) : store_(store), prefix_(std::move(scope) + "/") {}

  void set(const std::string& key, const std::string& value,
           const Cancellation* cancel = nullptr) override;
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const Cancellation* cancel = nullptr) override;
  std::optional<std::string> lookup(const std::string& key,
                                    const Cancellation* cancel = nullptr) override;
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const Cancellation* cancel = nullptr) override;
  bool remove(const std::string& key, const Cancellation* cancel = nullptr) override;
  std::string describe() const override { return store_.describe(); }

  // `key` of this scope as the store underneath names it.
  std::string full_key(const std::string& key) const { return prefix_ + key; }

 private:
  Store& store_;
  const std::string prefix_;
};

}  // namespace cohort::rendezvous
