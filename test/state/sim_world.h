// A world of elastic samplers in one process: the commit merge and the sync move the same bytes
// the collectives would (every rank's delta to every rank; rank 0's header and bitmap to all),
// through the same SamplerCore steps State uses. Only the transport is replaced.
#pragma once

#include <memory>
#include <vector>

#include "cohort/elastic/sampler.h"
#include "state/sampler_access.h"

namespace sim {

using cohort::elastic::ElasticSampler;
namespace wire = cohort::wire;
using cohort::elastic::detail::SamplerAccess;
using cohort::elastic::detail::SamplerCore;

inline SamplerCore& core(ElasticSampler& s) {
  return SamplerAccess::core(s);
}

struct World {
  uint64_t dataset_size;
  uint64_t seed;
  std::vector<std::unique_ptr<ElasticSampler>> ranks;

  int size() const { return static_cast<int>(ranks.size()); }
  ElasticSampler& operator[](int r) { return *ranks[static_cast<size_t>(r)]; }

  // Every rank's commit: the allgather, then each rank's own check and merge.
  void commit() {
    std::vector<wire::Writer> deltas(ranks.size());
    for (size_t r = 0; r < ranks.size(); ++r) core(*ranks[r]).write_delta(deltas[r]);
    std::vector<SamplerCore::Merge> merges;
    for (auto& s : ranks) {
      std::vector<wire::Reader> in;
      for (auto& d : deltas) in.emplace_back(d.bytes());
      merges.push_back(core(*s).check_merge(in));
    }
    for (size_t r = 0; r < ranks.size(); ++r) core(*ranks[r]).apply_merge(merges[r]);
  }

  // The world becomes `new_size` ranks: the first survivors keep their samplers, new ranks start
  // fresh (as a process that just joined), then everyone adopts rank 0's state.
  void resize_and_sync(int new_size) {
    ranks.resize(static_cast<size_t>(new_size));
    for (auto& s : ranks) {
      if (!s) s = std::make_unique<ElasticSampler>(dataset_size, seed);
    }
    wire::Writer header;
    core(*ranks[0]).write_sync_header(header);
    std::vector<uint64_t> bitmap(core(*ranks[0]).bitmap_words().begin(),
                                 core(*ranks[0]).bitmap_words().end());
    for (int r = 0; r < new_size; ++r) {
      auto words = core((*this)[r]).bitmap_words();
      std::copy(bitmap.begin(), bitmap.end(), words.begin());
      wire::Reader in(header.bytes());
      core((*this)[r]).adopt(in, r, new_size);
    }
  }

  void restore() {
    for (auto& s : ranks) core(*s).rollback();
  }
};

inline World make_world(uint64_t dataset_size, uint64_t seed, int size) {
  World w{dataset_size, seed, {}};
  w.ranks.push_back(std::make_unique<ElasticSampler>(dataset_size, seed));
  w.resize_and_sync(size);
  return w;
}

}  // namespace sim
