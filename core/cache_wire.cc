#include "core/cache_wire.h"

#include <string>

#include "cohort/errors.h"

#include "core/response_cache.h"

namespace cohort {
namespace {

constexpr uint32_t kHitStep = 2;  // consecutive ids, as encoded hits (id << 1 | changed)

void write_name(wire::Writer& w, const std::string& name) {
  w.varint(name.size());
  w.raw(std::as_bytes(std::span(name)));
}

std::string read_name(wire::Reader& rd) {
  auto bytes = rd.raw(rd.varcount("a name"));
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

uint32_t wire_id(const Response& r, size_t i) {
  return i < r.cache_ids.size() ? r.cache_ids[i] : 0;
}

}  // namespace

void IdBudget::spend(uint64_t n, const char* what) {
  if (n > left_) {
    throw wire::MalformedBytes(std::string(what) + " of " + std::to_string(n) +
                               " ids makes the message name more than " +
                               std::to_string(kMaxIdsPerMessage) + " ids");
  }
  left_ -= n;
}

void check_id_count(uint64_t n, const char* what) {
  if (n <= kMaxIdsPerMessage) return;
  throw InvalidArgument(std::string(what) + ": " + std::to_string(n) +
                        " tensors in one control message; at most " +
                        std::to_string(kMaxIdsPerMessage) + " travel in one cycle");
}

void write_hits(wire::Writer& w, const std::vector<uint32_t>& hits) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;  // first hit, length
  for (uint32_t hit : hits) {
    if (!runs.empty() && runs.back().first + kHitStep * runs.back().second == hit) {
      ++runs.back().second;
    } else {
      runs.emplace_back(hit, 1);
    }
  }
  w.varint(runs.size());
  for (auto [first, length] : runs) {
    w.varint(first);
    w.varint(length);
  }
}

std::vector<uint32_t> read_hits(wire::Reader& rd, IdBudget& budget) {
  std::vector<uint32_t> hits;
  for (uint64_t runs = rd.varcount("a list of hit runs"); runs > 0; --runs) {
    uint64_t first = rd.varint();
    uint64_t length = rd.varint();
    budget.spend(length, "a run of cache hits");
    if (first >> 1 == 0 || length == 0 || first + kHitStep * (length - 1) > UINT32_MAX) {
      throw wire::MalformedBytes("a run of " + std::to_string(length) + " cache hits from " +
                                 std::to_string(first) + " names no valid ids");
    }
    size_t at = hits.size();
    hits.resize(at + length);
    for (size_t k = 0; k < length; ++k) hits[at + k] = uint32_t(first) + kHitStep * uint32_t(k);
  }
  return hits;
}

void write_names(wire::Writer& w, const Response& r) {
  w.varint(r.names.size());
  for (size_t i = 0; i < r.names.size();) {
    uint32_t id = wire_id(r, i);
    w.varint(id);
    if (name_travels(id)) {
      write_name(w, r.names[i++]);
      continue;
    }
    size_t length = 1;
    while (i + length < r.names.size() && wire_id(r, i + length) == id + length) ++length;
    w.varint(length);
    i += length;
  }
}

void read_names(wire::Reader& rd, Response& r, IdBudget& budget) {
  uint64_t names = rd.varint();
  budget.spend(names, "a list of names");
  r.names.reserve(names);
  r.cache_ids.reserve(names);
  while (r.names.size() < names) {
    uint64_t id = rd.varint();
    if (id > UINT32_MAX) throw wire::MalformedBytes("cache id " + std::to_string(id));
    if (name_travels(uint32_t(id))) {
      r.cache_ids.push_back(uint32_t(id));
      r.names.push_back(read_name(rd));
      continue;
    }
    uint64_t length = rd.varint();
    if (length == 0 || length > names - r.names.size() || id + length - 1 > UINT32_MAX ||
        introduces(uint32_t(id + length - 1))) {
      throw wire::MalformedBytes("a run of " + std::to_string(length) + " cached names from id " +
                                 std::to_string(id) + " does not fit the response's " +
                                 std::to_string(names) + " names");
    }
    for (uint64_t k = 0; k < length; ++k) {
      r.cache_ids.push_back(uint32_t(id + k));
      r.names.emplace_back();
    }
  }
}

bool counts_known(const Response& r) {
  if (r.kind != Response::Kind::kExecute || r.type != OpType::kAllreduce) return false;
  if (r.names.empty() || r.cache_ids.size() != r.names.size()) return false;
  for (uint32_t id : r.cache_ids) {
    if (name_travels(id)) return false;
  }
  return true;
}

}  // namespace cohort
