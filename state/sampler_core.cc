#include "state/sampler_core.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "cohort/errors.h"
#include "state/delta_codec.h"

namespace cohort::elastic::detail {
namespace {

constexpr uint64_t kWordsPerChunk = 1 << 17;  // 1 MiB of bitmap per emitted chunk

void check_world(int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw InvalidArgument("rank " + std::to_string(rank) + " is not in a world of size " +
                          std::to_string(world_size));
  }
}

}  // namespace

SamplerCore::SamplerCore(uint64_t dataset_size, uint64_t seed, int rank, int world_size)
    : seed_(seed), perm_(dataset_size, seed, 0), set_(dataset_size) {
  check_world(rank, world_size);
  repartition(rank, world_size);
}

void SamplerCore::repartition(int rank, int world_size) {
  check_world(rank, world_size);
  rank_ = rank;
  world_size_ = world_size;
  // Rank r takes the unprocessed positions [k_r, k_{r+1}) in ascending order, where the counts
  // k_{r+1} - k_r differ by at most one; its range runs from its first position to the next
  // rank's first position.
  uint64_t left = set_.zeros(0, set_.size());
  uint64_t share = left / static_cast<uint64_t>(world_size);
  uint64_t extra = left % static_cast<uint64_t>(world_size);
  std::vector<uint64_t> ranks;
  for (uint64_t r = 1; r < static_cast<uint64_t>(world_size); ++r) {
    ranks.push_back(r * share + std::min(r, extra));
  }
  bounds_ = {0};
  for (uint64_t b : set_.select_zeros(ranks)) bounds_.push_back(b);
  bounds_.push_back(set_.size());
  ++generation_;
}

uint64_t SamplerCore::remaining_committed(int r) const {
  return set_.zeros(begin(r), end(r)) + (r == rank_ ? set_.uncommitted() : 0);
}

uint64_t SamplerCore::steps(uint64_t batch_size) const {
  if (batch_size == 0) throw InvalidArgument("a batch needs at least one sample");
  uint64_t most = 0;
  for (int r = 0; r < world_size_; ++r) most = std::max(most, remaining_committed(r));
  return (most + batch_size - 1) / batch_size;
}

bool SamplerCore::is_committed(uint64_t sample) const {
  if (sample >= dataset_size()) return false;
  uint64_t p = perm_.position_of(sample);
  return set_.test(p) && !set_.is_uncommitted(p);
}

int SamplerCore::owner(uint64_t position) const {
  auto it = std::upper_bound(bounds_.begin(), bounds_.end(), position);
  return static_cast<int>(it - bounds_.begin()) - 1;
}

void SamplerCore::record(std::span<const uint64_t> samples) {
  std::vector<uint64_t> done;  // positions set by this call, cleared again if a later one fails
  try {
    for (uint64_t sample : samples) {
      uint64_t p = sample < dataset_size() ? perm_.position_of(sample) : 0;
      if (sample >= dataset_size() || set_.test(p) || p < begin(rank_) || p >= end(rank_)) {
        throw InvalidArgument(bad_record(sample, p));
      }
      set_.set(p);
      done.push_back(p);
    }
  } catch (...) {
    for (uint64_t p : done) set_.unset(p);
    throw;
  }
}

std::string SamplerCore::bad_record(uint64_t sample, uint64_t p) const {
  std::string what = "record: sample " + std::to_string(sample);
  if (sample >= dataset_size()) {
    return what + " is outside the dataset of " + std::to_string(dataset_size()) + " samples";
  }
  if (set_.test(p)) {
    return what + (set_.is_uncommitted(p)
                       ? " was already recorded since the last commit"
                       : " was already processed in epoch " + std::to_string(epoch_));
  }
  return what + " is in rank " + std::to_string(owner(p)) + "'s partition, not this rank's (rank " +
         std::to_string(rank_) + " of " + std::to_string(world_size_) + ")";
}

void SamplerCore::set_epoch(uint64_t epoch) {
  if (epoch == epoch_) return;
  if (!previous_) {
    // Keep what a rollback must return to: the last committed epoch, and its set unless complete.
    set_.rollback();
    previous_ = Previous{epoch_, std::nullopt};
    if (!set_.full()) {
      previous_->set = std::move(set_);
      set_ = ProcessedSet(previous_->set->size());
    }
  }
  set_.clear_all();
  epoch_ = epoch;
  perm_ = Permutation(dataset_size(), seed_, epoch_);
  repartition(rank_, world_size_);
}

void SamplerCore::rollback() {
  if (previous_) {
    epoch_ = previous_->epoch;
    perm_ = Permutation(dataset_size(), seed_, epoch_);
    if (previous_->set) {
      set_ = std::move(*previous_->set);
    } else {
      set_.fill_all();
    }
    previous_.reset();
  }
  set_.rollback();
  repartition(rank_, world_size_);
}

uint64_t SamplerCore::fingerprint() const {
  uint64_t h = mix64(epoch_ ^ mix64(static_cast<uint64_t>(world_size_)));
  for (uint64_t b : bounds_) h = mix64(h ^ b);
  return h;
}

void SamplerCore::write_delta(wire::Writer& out) const {
  ProcessedSet::Delta d = set_.delta();
  out.u64(epoch_);
  out.u64(seed_);
  out.u64(dataset_size());
  out.u32(static_cast<uint32_t>(world_size_));
  out.u32(static_cast<uint32_t>(rank_));
  out.u64(fingerprint());
  out.u64(set_.count() - set_.uncommitted());
  out.u64(set_.uncommitted());
  encode_delta(out, d, set_, begin(rank_), end(rank_));
}

void SamplerCore::check_segment_header(wire::Reader& in, int sender, uint64_t committed) const {
  auto expect = [&](uint64_t theirs, uint64_t mine, const char* what) {
    if (theirs != mine) {
      throw MismatchError("rank " + std::to_string(sender) + " has " + what + " " +
                          std::to_string(theirs) + ", rank " + std::to_string(rank_) + " has " +
                          std::to_string(mine) +
                          " (every rank must commit, restore, sync and set_epoch alike)");
    }
  };
  expect(in.u64(), epoch_, "epoch");
  expect(in.u64(), seed_, "seed");
  expect(in.u64(), dataset_size(), "dataset size");
  expect(in.u32(), static_cast<uint64_t>(world_size_), "a partition for world size");
  expect(in.u32(), static_cast<uint64_t>(sender), "rank field");
  expect(in.u64(), fingerprint(), "partition fingerprint");
  expect(in.u64(), committed, "committed sample count");
}

SamplerCore::Merge SamplerCore::check_merge(std::span<wire::Reader> ranks) const {
  if (ranks.size() != static_cast<size_t>(world_size_)) {
    throw MismatchError("the sampler is partitioned for " + std::to_string(world_size_) +
                        " ranks but " + std::to_string(ranks.size()) +
                        " committed (call State::sync() after the world changes)");
  }
  uint64_t committed = set_.count() - set_.uncommitted();
  Merge merge;
  for (int s = 0; s < world_size_; ++s) {
    wire::Reader& in = ranks[static_cast<size_t>(s)];
    check_segment_header(in, s, committed);
    uint64_t declared = in.u64();
    ProcessedSet::Delta delta = decode_delta(in, set_, begin(s), end(s));
    uint64_t seen = 0;
    for (size_t i = 0; i < delta.words.size(); ++i) {
      uint64_t w = delta.first_word + i, bits = delta.words[i];
      seen += static_cast<uint64_t>(std::popcount(bits));
      if ((bits & ~range_mask(w, begin(s), end(s))) != 0 || (bits & set_.committed_word(w)) != 0) {
        throw MismatchError("rank " + std::to_string(s) +
                            " recorded positions outside its partition or already processed");
      }
    }
    if (seen != declared) {
      throw MismatchError("rank " + std::to_string(s) + " declared " + std::to_string(declared) +
                          " new samples but sent " + std::to_string(seen));
    }
    merge.segments.push_back({s, std::move(delta)});
  }
  return merge;
}

void SamplerCore::apply_merge(const Merge& merge) {
  for (const auto& seg : merge.segments) {
    if (seg.rank == rank_) continue;  // already in the set
    for (size_t i = 0; i < seg.delta.words.size(); ++i) {
      set_.merge_word(seg.delta.first_word + i, seg.delta.words[i]);
    }
  }
  set_.mark_committed();
  previous_.reset();
}

void SamplerCore::write_sync_header(wire::Writer& out) const {
  out.u64(seed_);
  out.u64(epoch_);
}

void SamplerCore::adopt(wire::Reader& header, int rank, int world_size) {
  uint64_t seed = header.u64(), epoch = header.u64();
  uint64_t last = set_.num_words() - 1;
  if ((set_.words()[last] & ~valid_bits(dataset_size(), last)) != 0) {
    throw MismatchError("the broadcast processed set has bits past the end of the dataset");
  }
  seed_ = seed;
  epoch_ = epoch;
  perm_ = Permutation(dataset_size(), seed_, epoch_);
  set_.recount();
  set_.mark_committed();
  previous_.reset();
  repartition(rank, world_size);
}

void SamplerCore::write_committed_header(wire::Writer& out) const {
  out.u64(dataset_size());
  out.u64(seed_);
  out.u64(previous_ ? previous_->epoch : epoch_);
  out.u64(set_.num_words());
}

void SamplerCore::write_committed_words(
    const std::function<void(std::span<const uint64_t>)>& emit) const {
  std::vector<uint64_t> chunk;
  chunk.reserve(std::min<uint64_t>(kWordsPerChunk, set_.num_words()));
  for (uint64_t w = 0; w < set_.num_words(); ++w) {
    if (!previous_) {
      chunk.push_back(set_.committed_word(w));
    } else {
      chunk.push_back(previous_->set ? previous_->set->words()[w] : valid_bits(dataset_size(), w));
    }
    if (chunk.size() == kWordsPerChunk || w + 1 == set_.num_words()) {
      emit(chunk);
      chunk.clear();
    }
  }
}

SamplerCore::Image SamplerCore::read_image(wire::Reader& in) const {
  uint64_t n = in.u64();
  if (n != dataset_size()) {
    throw wire::MalformedBytes("the sampler was saved for " + std::to_string(n) +
                               " samples, this one has " + std::to_string(dataset_size()));
  }
  Image image;
  image.seed = in.u64();
  image.epoch = in.u64();
  uint64_t count = in.u64();
  if (count != set_.num_words()) throw wire::MalformedBytes("the processed set has the wrong size");
  auto bytes = in.raw(count * 8);
  image.words.resize(count);
  std::memcpy(image.words.data(), bytes.data(), bytes.size());
  if ((image.words.back() & ~valid_bits(n, count - 1)) != 0) {
    throw wire::MalformedBytes("the processed set has bits past the end of the dataset");
  }
  return image;
}

SamplerCore::Image SamplerCore::committed_image() const {
  Image image{seed_, previous_ ? previous_->epoch : epoch_, {}};
  image.words.reserve(set_.num_words());
  write_committed_words([&](std::span<const uint64_t> words) {
    image.words.insert(image.words.end(), words.begin(), words.end());
  });
  return image;
}

void SamplerCore::load(Image image) {
  seed_ = image.seed;
  epoch_ = image.epoch;
  perm_ = Permutation(dataset_size(), seed_, epoch_);
  std::copy(image.words.begin(), image.words.end(), set_.mutable_words().begin());
  set_.recount();
  set_.mark_committed();
  previous_.reset();
  repartition(rank_, world_size_);
}

}  // namespace cohort::elastic::detail
