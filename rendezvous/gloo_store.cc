#include "rendezvous/gloo_store.h"

namespace cohort::rendezvous {

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  store_.set(key, std::string(data.begin(), data.end()), cancel_);
}

std::vector<char> GlooStore::get(const std::string& key) {
  std::string value = store_.get(key, timeout_, cancel_);
  return {value.begin(), value.end()};
}

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  store_.wait(keys, timeout, cancel_);
}

}  // namespace cohort::rendezvous
