// Gloo's legacy algorithms bind their buffers and communication slots when constructed, which
// costs more than running them (measured here: an 8-byte halving-doubling allreduce takes about
// 170 us when the object is reused and 300-470 us when it is built per call). This keeps recently
// used algorithm objects.
//
// Slots come from a per-context counter, so every rank must build (and evict) the same objects in
// the same order, or the ranks' slots drift apart and the job hangs. Hence keys hold only what is
// equal on every rank (never a pointer), eviction depends only on keys, and a rebuild after a
// buffer change is decided for all ranks at once (ops::BufferBinding::rebind). The buffer pointer
// is kept only to catch a caller that moved its memory without asking for a rebind: the cached
// algorithm would otherwise write into memory that may have been freed.
#pragma once

#include <gloo/algorithm.h>

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>

namespace cohort::ops {

class GlooAlgorithmCache {
 public:
  struct Key {
    std::string binding;  // BufferBinding::key
    int kind;             // algorithm, type and operation
    size_t count;
    bool operator==(const Key&) const = default;
  };

  // Returns the cached algorithm for `key`, building it with `make` on a miss or when `rebuild`.
  // Throws InternalError if a hit was built for another `buffer` and `rebuild` is false.
  gloo::Algorithm& get(const Key& key, void* buffer, bool rebuild, size_t bytes,
                       const std::function<std::unique_ptr<gloo::Algorithm>()>& make);

 private:
  static constexpr size_t kMaxEntries = 32;
  // Algorithms hold scratch space as large as their buffer; bound what the cache keeps alive.
  static constexpr size_t kMaxBytes = size_t{1} << 30;

  struct Entry {
    Key key;
    void* buffer;
    size_t bytes;
    std::unique_ptr<gloo::Algorithm> algorithm;
  };
  std::list<Entry> entries_;  // most recently used first
  size_t bytes_ = 0;
};

}  // namespace cohort::ops
