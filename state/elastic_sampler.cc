#include <string>

#include "cohort/cohort.h"
#include "cohort/elastic/sampler.h"
#include "state/sampler_core.h"

namespace cohort::elastic {
namespace {

struct World {
  int rank = 0;
  int size = 1;
};

World current_world() {
  try {
    if (cohort::is_initialized()) return {cohort::rank(), cohort::size()};
  } catch (const NotInitialized&) {
    // shut down between the two calls: a world of one, as before init()
  }
  return {};
}

}  // namespace

ElasticSampler::ElasticSampler(uint64_t dataset_size, uint64_t seed) {
  World w = current_world();
  core_ = std::make_unique<detail::SamplerCore>(dataset_size, seed, w.rank, w.size);
}

ElasticSampler::~ElasticSampler() = default;

uint64_t ElasticSampler::dataset_size() const {
  return core_->dataset_size();
}
uint64_t ElasticSampler::seed() const {
  return core_->seed();
}
uint64_t ElasticSampler::epoch() const {
  return core_->epoch();
}
int ElasticSampler::rank() const {
  return core_->rank();
}
int ElasticSampler::world_size() const {
  return core_->world_size();
}
void ElasticSampler::set_epoch(uint64_t epoch) {
  core_->set_epoch(epoch);
}
uint64_t ElasticSampler::steps(uint64_t batch_size) const {
  return core_->steps(batch_size);
}
void ElasticSampler::record(std::span<const uint64_t> samples) {
  core_->record(samples);
}
uint64_t ElasticSampler::remaining() const {
  return core_->remaining();
}
uint64_t ElasticSampler::unprocessed() const {
  return core_->unprocessed();
}
uint64_t ElasticSampler::uncommitted() const {
  return core_->uncommitted();
}
bool ElasticSampler::is_committed(uint64_t sample) const {
  return core_->is_committed(sample);
}

void ElasticSampler::check_world() const {
  if (!cohort::is_initialized()) return;  // simulated or single-process use
  World w = current_world();
  if (w.rank != core_->rank() || w.size != core_->world_size()) {
    throw InvalidArgument("the elastic sampler is partitioned for rank " +
                          std::to_string(core_->rank()) + " of " +
                          std::to_string(core_->world_size()) + " but this process is rank " +
                          std::to_string(w.rank) + " of " + std::to_string(w.size) +
                          ": call State::sync() after the world changes");
  }
}

Batches ElasticSampler::batches(uint64_t batch_size) const {
  check_world();
  const detail::SamplerCore* core = core_.get();
  uint64_t steps = core->steps(batch_size);
  uint64_t generation = core->generation();
  // The cursor walks this rank's range; positions recorded meanwhile (or out of order) are
  // skipped because they are set.
  uint64_t cursor = core->begin(core->rank());
  return Batches(
      steps, [core, batch_size, generation, cursor](std::vector<uint64_t>& batch) mutable {
        if (core->generation() != generation) {
          throw InvalidArgument(
              "the elastic sampler was repartitioned (set_epoch, restore, sync or checkpoint load) "
              "while its batches were being iterated: call batches() again");
        }
        batch.clear();
        while (batch.size() < batch_size) {
          cursor = core->next_unprocessed(cursor);
          if (cursor == core->end(core->rank())) break;
          batch.push_back(core->sample_at(cursor++));
        }
      });
}

}  // namespace cohort::elastic
