#include "ops/gloo_algorithm_cache.h"

#include "cohort/errors.h"

namespace cohort::ops {

gloo::Algorithm& GlooAlgorithmCache::get(
    const Key& key, void* buffer, bool rebuild, size_t bytes,
    const std::function<std::unique_ptr<gloo::Algorithm>()>& make) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    if (!rebuild) {
      if (it->buffer != buffer) {
        throw InternalError("Gloo allreduce: the buffer of '" + key.binding +
                            "' moved but the ranks were not told to rebind it");
      }
      entries_.splice(entries_.begin(), entries_, it);
      return *entries_.front().algorithm;
    }
    bytes_ -= it->bytes;
    entries_.erase(it);
    break;
  }
  while (!entries_.empty() && (entries_.size() >= kMaxEntries || bytes_ + bytes > kMaxBytes)) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
  entries_.push_front({key, buffer, bytes, make()});
  bytes_ += bytes;
  return *entries_.front().algorithm;
}

}  // namespace cohort::ops
