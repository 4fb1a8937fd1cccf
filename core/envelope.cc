#include "core/envelope.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/wire.h"
#include "cohort/errors.h"

namespace cohort {

void EnvelopeBuilder::add(int rank, std::span<const std::byte> list) {
  // The entries at or before `rank`'s last one cannot take it without reordering `rank`.
  size_t from = 0;
  for (size_t i = entries_.size(); i-- > 0;) {
    const auto& ranks = entries_[i].ranks;
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) {
      from = i + 1;
      break;
    }
  }
  for (size_t i = from; i < entries_.size(); ++i) {
    auto& e = entries_[i];
    if (!std::ranges::equal(e.list, list)) continue;
    e.ranks.insert(std::upper_bound(e.ranks.begin(), e.ranks.end(), rank), rank);
    return;
  }
  entries_.push_back({{rank}, std::vector<std::byte>(list.begin(), list.end())});
}

std::vector<std::byte> EnvelopeBuilder::take() {
  auto bytes = encode_envelope(entries_);
  entries_.clear();
  return bytes;
}

std::vector<std::byte> encode_envelope(const std::vector<EnvelopeEntry>& entries) {
  wire::Writer w;
  w.u8(kEnvelopeFormat);
  w.varint(entries.size());
  for (const auto& e : entries) {
    w.varint(e.ranks.size());
    for (int r : e.ranks) w.varint(static_cast<uint64_t>(r));
    w.varint(e.list.size());
    w.raw(e.list);
  }
  return std::move(w.bytes());
}

bool is_envelope(std::span<const std::byte> bytes) {
  return !bytes.empty() && static_cast<uint8_t>(bytes[0]) == kEnvelopeFormat;
}

namespace {

void read_entry(wire::Reader& rd, int size, std::span<const int> behind, EnvelopeView& out) {
  EnvelopeView::Entry e{.first = out.ranks.size()};
  e.count = rd.varcount("ranks");
  if (e.count == 0) throw wire::MalformedBytes("an entry names no rank");
  for (size_t i = 0; i < e.count; ++i) {
    uint64_t r = rd.varint();
    if (r >= static_cast<uint64_t>(size)) {
      throw wire::MalformedBytes("rank " + std::to_string(r) + " is not below the size " +
                                 std::to_string(size));
    }
    int rank = static_cast<int>(r);
    if (i > 0 && rank <= out.ranks.back()) {
      throw wire::MalformedBytes("an entry's ranks are not ascending");
    }
    if (std::find(behind.begin(), behind.end(), rank) == behind.end()) {
      throw wire::MalformedBytes("rank " + std::to_string(rank) + " is not behind this leader");
    }
    out.ranks.push_back(rank);
  }
  uint64_t length = rd.varint();
  if (length == 0) throw wire::MalformedBytes("an entry carries an empty list");
  if (length > rd.remaining()) throw wire::MalformedBytes("an entry runs past the envelope");
  e.list = rd.raw(length);
  out.entries.push_back(e);
}

}  // namespace

void decode_envelope(std::span<const std::byte> bytes, int leader, int size,
                     std::span<const int> behind, EnvelopeView& out) {
  out.ranks.clear();
  out.entries.clear();
  // As wire::decode does, but the refusal's words are put together only for a refusal: rank 0
  // takes an envelope from every leader every cycle.
  wire::Reader rd(bytes);
  try {
    if (rd.u8() != kEnvelopeFormat) throw wire::MalformedBytes("not an envelope");
    uint64_t n = rd.varcount("entries");
    for (uint64_t i = 0; i < n; ++i) read_entry(rd, size, behind, out);
    rd.expect_done();
  } catch (const wire::MalformedBytes& e) {
    throw InternalError("rank " + std::to_string(leader) +
                        " (a host leader) sent a malformed envelope: " + e.what());
  }
}

}  // namespace cohort
