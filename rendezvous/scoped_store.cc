#include "rendezvous/scoped_store.h"

namespace cohort::rendezvous {

void ScopedStore::set(const std::string& key, const std::string& value,
                      const Cancellation* cancel) {
  store_.set(full_key(key), value, cancel);
}

std::string ScopedStore::get(const std::string& key, std::chrono::milliseconds wait,
                             const Cancellation* cancel) {
  return store_.get(full_key(key), wait, cancel);
}

std::optional<std::string> ScopedStore::lookup(const std::string& key, const Cancellation* cancel) {
  return store_.lookup(full_key(key), cancel);
}

bool ScopedStore::compare_and_set(const std::string& key,
                                  const std::optional<std::string>& expected,
                                  const std::string& desired, const Cancellation* cancel) {
  return store_.compare_and_set(full_key(key), expected, desired, cancel);
}

bool ScopedStore::remove(const std::string& key, const Cancellation* cancel) {
  return store_.remove(full_key(key), cancel);
}

}  // namespace cohort::rendezvous
