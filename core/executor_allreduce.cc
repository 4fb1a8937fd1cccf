// The allreduce half of the Executor: lays out the tensors a response names (each tensor of a
// group), then reduces them batch by batch as rank 0 cut them: a batch of several is packed into
// the process set's fusion buffer, a batch of one is reduced where it lies.
#include <algorithm>
#include <cstring>

#include "cohort/errors.h"
#include "core/executor.h"
#include "ops/identity.h"
#include "ops/reduce.h"

namespace cohort {

struct Executor::ReducedTensor {
  const void* input = nullptr;  // null where this rank never submitted it (it has joined)
  void* output = nullptr;
  size_t count = 0;
  size_t name = 0;    // index in Response::names
  size_t member = 0;  // index among that name's tensors
  int device = kCpuDevice;
};

namespace {

void copy_bytes(void* to, const void* from, size_t bytes) {
  if (bytes > 0 && to != from) std::memcpy(to, from, bytes);
}

std::vector<Response::Batch> batches_of(const Response& response) {
  if (!response.batches.empty()) return response.batches;
  return {{static_cast<uint32_t>(response.counts.size()), response.dtype}};
}

size_t parts_of(const Response& response, size_t name) {
  return response.parts.empty() ? 1 : static_cast<size_t>(response.parts[name]);
}

// Rank 0's response must account for every tensor exactly once; anything else is a broken peer.
void check_layout(const Response& response) {
  size_t parts = 0, batched = 0;
  for (size_t i = 0; i < response.names.size(); ++i) parts += parts_of(response, i);
  for (const auto& batch : batches_of(response)) batched += batch.tensors;
  bool parts_match = response.parts.empty() || response.parts.size() == response.names.size();
  if (!parts_match || parts != response.counts.size() || batched != response.counts.size()) {
    throw InternalError("malformed allreduce response for '" + response.names.at(0) +
                        "': " + std::to_string(response.counts.size()) + " element counts for " +
                        std::to_string(parts) + " tensors in " + std::to_string(batched) +
                        " batches");
  }
}

// The tensors of `entry` that rank 0 scheduled as `parts` tensors of `counts`.
void check_entry(const TensorEntry& entry, size_t parts, const int64_t* counts) {
  size_t mine = entry.group.empty() ? 1 : entry.group.size();
  bool same = mine == parts;
  for (size_t m = 0; same && m < mine; ++m) {
    int64_t elements =
        entry.group.empty() ? entry.output.num_elements() : entry.request.group.elements(m);
    same = elements == counts[m];
  }
  if (!same) {
    throw InternalError("rank 0 scheduled '" + entry.request.name + "' as " +
                        std::to_string(parts) + " tensor(s) of other sizes than this rank's " +
                        std::to_string(mine));
  }
}

// The key under which the backend keeps state for a tensor reduced where it lies: its name, and
// for a member of a group the member's number after a NUL, which no submitted name can clash with
// in practice (and it is the same on every rank, which the backend's cache needs).
std::string binding_key(const Response& response, size_t name, size_t member) {
  if (parts_of(response, name) == 1) return response.names[name];
  return response.names[name] + '\0' + std::to_string(member);
}

// The reduction this rank's entries asked for (the same on every rank once negotiated).
Request reduction_of(const Response& response, const std::vector<TensorEntry>& entries) {
  Request how{.reduce_op = response.reduce_op};
  for (const auto& entry : entries) {
    if (!entry.handle) continue;
    how.prescale = entry.request.prescale;
    how.postscale = entry.request.postscale;
    break;
  }
  return how;
}

std::string_view timeline_op(const Response& response, const TensorEntry& entry) {
  if (!entry.group.empty()) return "grouped allreduce";
  return response.counts.size() > 1 ? "allreduce (fused)" : "allreduce";
}

size_t bytes_of(const TensorEntry& entry) {
  if (entry.group.empty()) return entry.output.num_bytes();
  const GroupSpec& group = entry.request.group;
  size_t bytes = 0;
  for (size_t m = 0; m < group.size(); ++m) {
    bytes += static_cast<size_t>(group.elements(m)) * element_size(group.dtype(m));
  }
  return bytes;
}

}  // namespace

void Executor::run_allreduce(const Response& response) {
  std::vector<TensorEntry> entries = take_entries(response);
  try {
    for (const auto& entry : entries) {
      if (!entry.handle) continue;
      timeline_.execution_started(entry.request.name, timeline_op(response, entry),
                                  bytes_of(entry));
    }
    reduce_all(response, entries);
  } catch (...) {
    complete_with_current_error(entries);
    return;
  }
  for (auto& entry : entries) {
    if (!entry.handle) continue;
    timeline_.execution_ended(entry.request.name, "ok");
    entry.handle->complete();
  }
}

void Executor::reduce_all(const Response& response, std::vector<TensorEntry>& entries) {
  check_layout(response);
  ProcessSetState& set = member_set(response.process_set);
  std::vector<ReducedTensor> tensors;
  tensors.reserve(response.counts.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const TensorEntry& entry = entries[i];
    size_t parts = parts_of(response, i);
    if (entry.handle) check_entry(entry, parts, response.counts.data() + tensors.size());
    for (size_t m = 0; m < parts; ++m) {
      ReducedTensor t{
          .count = static_cast<size_t>(response.counts[tensors.size()]), .name = i, .member = m};
      if (entry.handle) {
        t.input = entry.group.empty() ? entry.input.data : entry.group[m];
        t.output = entry.group.empty() ? entry.output.data : entry.group[m];
        t.device = entry.request.device;  // this rank's own, which may differ from rank 0's
      }
      tensors.push_back(t);
    }
  }
  // The path depends only on the response, never on what this rank holds: every rank must bind
  // the backend's algorithms the same way.
  auto batches = batches_of(response);
  bool moved = grow_fusion_buffer(set, batches, tensors);
  Request how = reduction_of(response, entries);
  size_t first = 0;
  for (const auto& batch : batches) {
    std::span<const ReducedTensor> part(tensors.data() + first, batch.tensors);
    how.dtype = batch.dtype;
    if (batch.tensors == 1) {
      reduce_alone(response, set, part[0], how);
    } else {
      reduce_packed(set, part, how, moved);
    }
    first += batch.tensors;
  }
}

bool Executor::grow_fusion_buffer(ProcessSetState& set, const std::vector<Response::Batch>& batches,
                                  const std::vector<ReducedTensor>& tensors) {
  size_t largest = 0, first = 0;
  for (const auto& batch : batches) {
    size_t bytes = 0;
    for (size_t i = first; i < first + batch.tensors; ++i) {
      bytes += tensors[i].count * element_size(batch.dtype);
    }
    if (batch.tensors > 1) largest = std::max(largest, bytes);
    first += batch.tensors;
  }
  const std::byte* before = set.fusion_buffer.data();
  if (set.fusion_buffer.size() < largest) set.fusion_buffer.resize(largest);
  bool moved = set.fusion_buffer.data() != before;
  if (moved) ++set.generation;
  return moved;
}

void Executor::reduce_alone(const Response& response, ProcessSetState& set,
                            const ReducedTensor& tensor, const Request& how) {
  ops::BufferBinding binding{binding_key(response, tensor.name, tensor.member), response.rebind};
  if (response.device != kCpuDevice) {
    // Rank 0 refuses device allreduces while a rank has joined, so this rank submitted it.
    if (!tensor.input) throw InternalError("rank 0 scheduled a device allreduce on a joined rank");
    return reduce_on_device(set, tensor, how, binding);
  }
  if (!tensor.input) {
    // This rank has joined: it reduces the identity (rank 0 made every rank rebind for this).
    scratch_.resize(tensor.count * element_size(how.dtype));
    ops::fill_identity(scratch_.data(), tensor.count, how.dtype, how.reduce_op);
    reduce_in_place(set, scratch_.data(), tensor.count, how, binding, /*prescale=*/false);
    return;
  }
  copy_bytes(tensor.output, tensor.input, tensor.count * element_size(how.dtype));
  reduce_in_place(set, tensor.output, tensor.count, how, binding);
}

void Executor::reduce_on_device(ProcessSetState& set, const ReducedTensor& tensor,
                                const Request& how, const ops::BufferBinding& binding) {
  // In place (checked at submission): the data never leaves the device.
  ops::DeviceBackend& device = device_backend_for(set, tensor.device);
  if (is_scaled(how)) {
    device.allreduce_scaled(tensor.output, tensor.count, how.dtype,
                            device_factor(how, set.members.size()));
  } else {
    device.allreduce(tensor.output, tensor.count, how.dtype, how.reduce_op, binding);
  }
}

void Executor::reduce_packed(ProcessSetState& set, std::span<const ReducedTensor> tensors,
                             const Request& how, bool moved) {
  size_t element = element_size(how.dtype);
  std::byte* slot = set.fusion_buffer.data();
  for (const auto& t : tensors) {
    if (t.input) {
      copy_bytes(slot, t.input, t.count * element);
      if (how.prescale != 1.0) ops::scale(slot, t.count, how.dtype, how.prescale);
    } else {
      // This rank has joined: it adds nothing to the tensors it never submitted.
      ops::fill_identity(slot, t.count, how.dtype, how.reduce_op);
    }
    slot += t.count * element;
  }
  size_t total = static_cast<size_t>(slot - set.fusion_buffer.data()) / element;
  reduce_in_place(set, set.fusion_buffer.data(), total, how,
                  {"cohort.fusion." + std::to_string(set.generation), moved},
                  /*prescale=*/false);
  slot = set.fusion_buffer.data();
  for (const auto& t : tensors) {
    if (t.output) copy_bytes(t.output, slot, t.count * element);
    slot += t.count * element;
  }
}

void Executor::reduce_in_place(ProcessSetState& set, void* data, size_t count, const Request& req,
                               const ops::BufferBinding& binding, bool prescale) {
  if (prescale && req.prescale != 1.0) ops::scale(data, count, req.dtype, req.prescale);
  bool average = req.reduce_op == ReduceOp::kAverage;
  set.backend->allreduce(data, count, req.dtype, average ? ReduceOp::kSum : req.reduce_op, binding);
  double post = req.postscale / (average ? static_cast<double>(set.members.size()) : 1.0);
  if (post != 1.0) ops::scale(data, count, req.dtype, post);
}

}  // namespace cohort
