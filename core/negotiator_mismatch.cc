// find_mismatch: whether the ranks' requests for one name agree, and if not, an error that names
// the first field that differs and what each rank said for it (core/negotiator.h).
#include <algorithm>
#include <functional>
#include <sstream>

#include "core/negotiator.h"

namespace cohort {
namespace {

template <typename T>
std::string to_text(const std::vector<T>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

// Builds "rank 0 [2, 3], rank 1 [2, 4]" for the field that differs among the submitting ranks.
template <typename Field>
std::optional<std::string> differing(const std::vector<std::optional<Request>>& by_rank,
                                     const char* what, Field field) {
  const Request* first = nullptr;
  bool same = true;
  for (const auto& r : by_rank) {
    if (!r) continue;
    if (!first) first = &*r;
    same = same && field(*r) == field(*first);
  }
  if (same) return std::nullopt;
  std::ostringstream out;
  out << "mismatched " << what << ": ";
  const char* separator = "";
  for (size_t rank = 0; rank < by_rank.size(); ++rank) {
    if (!by_rank[rank]) continue;
    out << separator << "rank " << rank << " " << field(*by_rank[rank]);
    separator = ", ";
  }
  return out.str();
}

// Host or device memory is for the ranks to agree on; which CUDA device is each rank's own (one
// GPU per rank, usually the local rank's).
std::string_view memory_of(const Request& r) {
  return r.device == kCpuDevice ? "host" : "CUDA device";
}

Shape trailing_dims(const Request& r) {
  return r.shape.empty() ? Shape{} : Shape(r.shape.begin() + 1, r.shape.end());
}

bool per_rank_first_dim(OpType type) {
  return type == OpType::kAllgather || type == OpType::kAlltoall;
}

// Whether two ranks' requests agree in everything the ranks must agree on (for allgather and
// alltoall the first dimension and the splits are each rank's own).
bool agree(const Request& a, const Request& b) {
  bool scalars = a.type == b.type && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
                 a.root == b.root && a.prescale == b.prescale && a.postscale == b.postscale &&
                 a.process_set == b.process_set && memory_of(a) == memory_of(b) &&
                 a.members == b.members && a.group == b.group;
  if (!scalars) return false;
  if (!per_rank_first_dim(a.type)) return a.shape == b.shape && a.splits == b.splits;
  return a.shape.size() == b.shape.size() &&
         (a.shape.empty() || std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1));
}

// True when every submitted request agrees with the first: the common case, checked without
// building any message.
bool all_agree(const std::vector<std::optional<Request>>& by_rank) {
  const Request* first = nullptr;
  for (const auto& r : by_rank) {
    if (!r) continue;
    if (!first) first = &*r;
    if (!agree(*first, *r)) return false;
  }
  return true;
}

// The first tensor of a grouped allreduce whose type or shape differs among the ranks, by
// number (the ranks agree on how many tensors the group has).
std::optional<std::string> differing_member(const std::vector<std::optional<Request>>& by_rank) {
  using R = const Request&;
  const Request& first =
      **std::find_if(by_rank.begin(), by_rank.end(), [](const auto& r) { return r.has_value(); });
  for (size_t i = 0; i < first.group.size(); ++i) {
    auto message =
        differing(by_rank, "data types", [i](R r) { return to_string(r.group.dtype(i)); });
    if (!message) {
      message = differing(by_rank, "shapes", [i](R r) { return to_string(r.group.shape(i)); });
    }
    if (message) return "member " + std::to_string(i) + ": " + *message;
  }
  return std::nullopt;
}

using Check = std::function<std::optional<std::string>()>;

std::vector<Check> checks_for(const Request& first,
                              const std::vector<std::optional<Request>>& by_rank) {
  using R = const Request&;
  OpType type = first.type;
  std::vector<Check> checks = {
      [&] { return differing(by_rank, "operations", [](R r) { return to_string(r.type); }); },
      [&] { return differing(by_rank, "process sets", [](R r) { return r.process_set; }); },
      [&] { return differing(by_rank, "memory", [](R r) { return memory_of(r); }); },
      [&] {
        return differing(by_rank, "group sizes (0: not a group)",
                         [](R r) { return r.group.size(); });
      },
  };
  if (!first.group.empty()) {
    checks.push_back([&] { return differing_member(by_rank); });
  } else {
    checks.push_back(
        [&] { return differing(by_rank, "data types", [](R r) { return to_string(r.dtype); }); });
  }
  bool same_shape =
      type == OpType::kAllreduce || type == OpType::kBroadcast || type == OpType::kReducescatter;
  if (same_shape && first.group.empty()) {
    checks.push_back(
        [&] { return differing(by_rank, "shapes", [](R r) { return to_string(r.shape); }); });
  }
  if (type == OpType::kAllreduce || type == OpType::kReducescatter) {
    checks.push_back([&] {
      return differing(by_rank, "reduce ops", [](R r) { return to_string(r.reduce_op); });
    });
    checks.push_back(
        [&] { return differing(by_rank, "prescale factors", [](R r) { return r.prescale; }); });
    checks.push_back(
        [&] { return differing(by_rank, "postscale factors", [](R r) { return r.postscale; }); });
  }
  if (type == OpType::kBroadcast) {
    checks.push_back([&] { return differing(by_rank, "root ranks", [](R r) { return r.root; }); });
  }
  if (per_rank_first_dim(type)) {
    checks.push_back([&] {
      return differing(by_rank, "ranks (number of dimensions)", [](R r) { return r.shape.size(); });
    });
    checks.push_back([&] {
      return differing(by_rank, "shapes after the first dimension",
                       [](R r) { return to_string(trailing_dims(r)); });
    });
  }
  if (type == OpType::kAddProcessSet) {
    checks.push_back(
        [&] { return differing(by_rank, "member ranks", [](R r) { return to_text(r.members); }); });
  }
  if (type == OpType::kRemoveProcessSet) {
    checks.push_back([&] {
      return differing(by_rank, "process sets to remove", [](R r) { return to_text(r.members); });
    });
  }
  return checks;
}

}  // namespace

std::optional<std::string> find_mismatch(const std::string& name,
                                         const std::vector<std::optional<Request>>& by_rank) {
  if (all_agree(by_rank)) return std::nullopt;
  const Request& first =
      **std::find_if(by_rank.begin(), by_rank.end(), [](const auto& r) { return r.has_value(); });
  for (const auto& check : checks_for(first, by_rank)) {
    if (auto message = check()) {
      return std::string(to_string(first.type)) + " '" + name + "': " + *message;
    }
  }
  return std::nullopt;
}

}  // namespace cohort
