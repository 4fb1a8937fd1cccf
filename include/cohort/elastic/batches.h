// A single-pass range of batches of sample ids, as the samplers hand them out:
//
//   for (const auto& batch : sampler.batches(32)) { train(batch); sampler.record(batch); }
//
// The range knows its length up front (size()), which is the same on every rank, so a training
// loop built on it never runs one more step on one rank than on another. A batch may be shorter
// than the batch size, or empty, near the end of a rank's share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <vector>

namespace cohort::elastic {

// The range that ElasticSampler::batches() and DistributedSampler::batches() return.
class Batches {
 public:
  // Fills the next batch (clearing it first).
  using Next = std::function<void(std::vector<uint64_t>& batch)>;
  // A range of `steps` batches, each filled by `next` (the samplers make these).
  Batches(uint64_t steps, Next next) : steps_(steps), next_(std::move(next)) {}

  // How many batches the range yields.
  uint64_t size() const { return steps_; }

  class iterator {
   public:
    using value_type = std::vector<uint64_t>;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(Batches* range) : range_(range) {}
    const std::vector<uint64_t>& operator*() const { return range_->batch_; }
    const std::vector<uint64_t>* operator->() const { return &range_->batch_; }
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    void operator++(int) { range_->advance(); }
    friend bool operator==(const iterator& it, std::default_sentinel_t) {
      return it.range_->exhausted();
    }

   private:
    Batches* range_ = nullptr;
  };

  // Call once: the range is single-pass.
  iterator begin() {
    advance();
    return iterator(this);
  }
  // The end of the range.
  std::default_sentinel_t end() const { return {}; }
  // Whether every batch has been handed out.
  bool exhausted() const { return taken_ > steps_; }

 private:
  void advance() {
    if (++taken_ <= steps_) next_(batch_);
  }

  uint64_t steps_;
  uint64_t taken_ = 0;  // batches produced so far; steps_ + 1 once exhausted
  Next next_;
  std::vector<uint64_t> batch_;
};

}  // namespace cohort::elastic
