#include "core/fusion.h"

namespace cohort {
namespace {

bool fusible(const ReadyResponse& r) {
  // Device tensors are not fused: the fusion buffer is host memory.
  return r.response.kind == Response::Kind::kExecute && r.response.type == OpType::kAllreduce &&
         r.description.device == kCpuDevice;
}

bool same_kind(const Request& a, const Request& b) {
  return a.dtype == b.dtype && a.reduce_op == b.reduce_op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.process_set == b.process_set;
}

size_t bytes_of(const Request& r) {
  return static_cast<size_t>(num_elements(r.shape)) * element_size(r.dtype);
}

}  // namespace

std::vector<Response> fuse_responses(std::vector<ReadyResponse> ready, size_t threshold) {
  std::vector<Response> out;
  std::vector<bool> taken(ready.size(), false);
  for (size_t i = 0; i < ready.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    Response group = std::move(ready[i].response);
    if (threshold > 0 && fusible(ready[i])) {
      size_t bytes = bytes_of(ready[i].description);
      group.counts = {num_elements(ready[i].description.shape)};
      // Look ahead past responses of another kind or too large for what is left.
      for (size_t j = i + 1; j < ready.size() && bytes < threshold; ++j) {
        if (taken[j] || !fusible(ready[j])) continue;
        if (!same_kind(ready[i].description, ready[j].description)) continue;
        size_t more = bytes_of(ready[j].description);
        if (bytes + more > threshold) continue;
        bytes += more;
        taken[j] = true;
        group.names.push_back(ready[j].response.names.front());
        group.counts.push_back(num_elements(ready[j].description.shape));
        const auto& ids = ready[j].response.cache_ids;
        if (!group.cache_ids.empty()) group.cache_ids.push_back(ids.empty() ? 0 : ids.front());
        group.rebind = group.rebind || ready[j].response.rebind;
      }
    }
    out.push_back(std::move(group));
  }
  return out;
}

}  // namespace cohort
