#include "core/fusion.h"

namespace cohort {
namespace {

bool reduces(const ReadyResponse& r) {
  return r.response.kind == Response::Kind::kExecute && r.response.type == OpType::kAllreduce;
}

bool fusible(const ReadyResponse& r) {
  // Device tensors are not fused: the fusion buffer is host memory.
  return reduces(r) && r.how().device == kCpuDevice;
}

bool same_kind(const Request& a, const Request& b) {
  return a.dtype == b.dtype && a.reduce_op == b.reduce_op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.process_set == b.process_set;
}

size_t bytes_of(const Request& r) {
  size_t bytes = 0;
  for (size_t i = 0; i < num_tensors(r); ++i) {
    bytes += static_cast<size_t>(tensor_elements(r, i)) * element_size(tensor_dtype(r, i));
  }
  return bytes;
}

// The tensors of one allreduce response as it is put together: every tensor of every name it
// takes (a group's each), and then how they are cut into batches.
class Packing {
 public:
  // `names`: how many names it may take at most (room is made for them once).
  Packing(Response response, size_t names) : response_(std::move(response)) {
    response_.names.reserve(names);
    if (!response_.cache_ids.empty()) response_.cache_ids.reserve(names);
    response_.counts.reserve(names);
    response_.parts.reserve(names);
    dtypes_.reserve(names);
  }

  void add(const Request& description) {
    size_t n = num_tensors(description);
    for (size_t i = 0; i < n; ++i) {
      response_.counts.push_back(tensor_elements(description, i));
      dtypes_.push_back(tensor_dtype(description, i));
    }
    response_.parts.push_back(static_cast<int64_t>(n));
    several_ = several_ || n > 1;
  }
  void take(Response& other, const Request& description) {
    response_.names.push_back(std::move(other.names.front()));
    const auto& ids = other.cache_ids;
    if (!response_.cache_ids.empty()) response_.cache_ids.push_back(ids.empty() ? 0 : ids.front());
    response_.rebind = response_.rebind || other.rebind;
    add(description);
  }

  // Batches of consecutive tensors of one type up to `limit` bytes each; with `alone`, one
  // tensor per batch.
  Response finish(size_t limit, bool alone) {
    if (!several_) response_.parts.clear();  // one tensor per name: the default
    auto& batches = response_.batches;
    size_t bytes = 0;
    for (size_t i = 0; i < dtypes_.size(); ++i) {
      size_t more = static_cast<size_t>(response_.counts[i]) * element_size(dtypes_[i]);
      bool extend =
          !alone && !batches.empty() && batches.back().dtype == dtypes_[i] && bytes + more <= limit;
      if (!extend) {
        batches.push_back({0, dtypes_[i]});
        bytes = 0;
      }
      ++batches.back().tensors;
      bytes += more;
    }
    if (batches.size() == 1 && batches[0].dtype == response_.dtype) batches.clear();  // default
    return std::move(response_);
  }

 private:
  Response response_;
  std::vector<DataType> dtypes_;
  bool several_ = false;
};

}  // namespace

std::vector<Response> fuse_responses(std::vector<ReadyResponse> ready, size_t threshold) {
  std::vector<Response> out;
  out.reserve(ready.size());
  std::vector<bool> taken(ready.size(), false);
  for (size_t i = 0; i < ready.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    if (!reduces(ready[i])) {
      out.push_back(std::move(ready[i].response));
      continue;
    }
    const Request& first = ready[i].how();
    Packing packing(std::move(ready[i].response), fusible(ready[i]) ? ready.size() - i : 1);
    packing.add(first);
    size_t bytes = bytes_of(first);
    // Look ahead past responses of another kind or too large for what is left.
    for (size_t j = i + 1; threshold > 0 && fusible(ready[i]) && j < ready.size(); ++j) {
      if (bytes >= threshold) break;
      if (taken[j] || !fusible(ready[j]) || !same_kind(first, ready[j].how())) continue;
      size_t more = bytes_of(ready[j].how());
      if (bytes + more > threshold) continue;
      bytes += more;
      taken[j] = true;
      packing.take(ready[j].response, ready[j].how());
    }
    out.push_back(packing.finish(threshold, threshold == 0 || !fusible(ready[i])));
  }
  return out;
}

}  // namespace cohort
