#include "ops/device_choice.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "cohort/errors.h"

namespace cohort::ops {
namespace {

constexpr size_t kField = 256;  // bytes per field in the exchange, the last one a NUL

struct Record {
  char host[kField];
  char gpu[kField];
  char error[kField];
};

void put(char (&field)[kField], const std::string& text) {
  size_t n = std::min(text.size(), kField - 1);
  std::memcpy(field, text.data(), n);
  field[n] = '\0';
}

std::string get(const char (&field)[kField]) {
  return std::string(field, strnlen(field, kField));
}

// The ranks listed, "1, 3".
std::string list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// The first pair of ranks that share a GPU, as "ranks 0 and 1 (host h, GPU g)"; "" if none.
std::string shared_gpu(std::span<const DeviceIdentity> identities) {
  std::map<std::pair<std::string, std::string>, int> first;
  for (int r = 0; r < static_cast<int>(identities.size()); ++r) {
    const DeviceIdentity& id = identities[r];
    auto [it, fresh] = first.emplace(std::make_pair(id.host, id.gpu), r);
    if (!fresh) {
      return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share GPU " +
             id.gpu + " on " + id.host;
    }
  }
  return "";
}

void require_usable(std::span<const DeviceIdentity> identities, int rank) {
  std::vector<int> failed;
  for (int r = 0; r < static_cast<int>(identities.size()); ++r) {
    if (!identities[r].error.empty()) failed.push_back(r);
  }
  if (failed.empty()) return;
  std::string message = "device backend: rank(s) " + list(failed) + " of " +
                        std::to_string(identities.size()) +
                        " could not use their CUDA device; no device backend was made";
  if (!identities[rank].error.empty()) {
    message += ". Rank " + std::to_string(rank) + ": " + identities[rank].error;
  }
  throw InternalError(message);
}

}  // namespace

std::string_view to_string(DeviceOperations operations) {
  switch (operations) {
    case DeviceOperations::kNccl:
      return "nccl";
    case DeviceOperations::kStaged:
      return "staged";
    case DeviceOperations::kAuto:
      break;
  }
  return "auto";
}

std::vector<DeviceIdentity> exchange_identities(Backend& bootstrap, const DeviceIdentity& mine) {
  Record record{};
  put(record.host, mine.host);
  put(record.gpu, mine.gpu);
  put(record.error, mine.error);
  std::vector<Record> all(bootstrap.size());
  std::vector<size_t> counts(all.size(), sizeof(Record));
  bootstrap.allgatherv(&record, all.data(), counts);
  std::vector<DeviceIdentity> identities;
  for (const Record& r : all) identities.push_back({get(r.host), get(r.gpu), get(r.error)});
  return identities;
}

DeviceChoice choose_device_backend(DeviceOperations requested, bool nccl_built,
                                   std::span<const DeviceIdentity> identities, int rank) {
  require_usable(identities, rank);
  std::string shared = shared_gpu(identities);
  if (requested == DeviceOperations::kStaged) {
    return {false, "COHORT_DEVICE_OPERATIONS=staged"};
  }
  if (requested == DeviceOperations::kNccl) {
    if (!nccl_built) {
      throw InvalidArgument(
          "COHORT_DEVICE_OPERATIONS=nccl, but this Cohort was built without "
          "NCCL (use auto or staged)");
    }
    if (!shared.empty()) {
      throw InvalidArgument("COHORT_DEVICE_OPERATIONS=nccl, but " + shared +
                            ", and NCCL needs a GPU per rank (use auto or staged)");
    }
    return {true, "COHORT_DEVICE_OPERATIONS=nccl"};
  }
  if (!nccl_built) return {false, "this Cohort was built without NCCL"};
  if (!shared.empty()) return {false, shared + ", and NCCL needs a GPU per rank"};
  return {true, "every rank has a GPU of its own"};
}

}  // namespace cohort::ops
