// A host leader's message to rank 0 (COHORT_CONTROL_LEADERS, docs/scaling.md): the RequestLists
// of the ranks behind it, its own included, in one frame. Lists with the same bytes from several
// ranks (a cached step's hits, the usual case) travel once, naming those ranks, so that rank 0
// decodes them once and counts them for every named rank. Each rank's lists keep their order.
//
// Wire form: the format byte kEnvelopeFormat (never a RequestList's first byte), a varint count of
// entries, and per entry a varint count of ranks, the ranks (varints, ascending), a varint byte
// length and the RequestList's encoded bytes, untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cohort {

constexpr uint8_t kEnvelopeFormat = 0xE1;

struct EnvelopeEntry {
  std::vector<int> ranks;       // ascending, each at most once
  std::vector<std::byte> list;  // an encoded RequestList, as its rank sent it

  bool operator==(const EnvelopeEntry&) const = default;
};

// What a leader gathers between two sends, merging as it goes.
class EnvelopeBuilder {
 public:
  // `rank`'s next encoded RequestList. It joins an entry with the same bytes only if that entry
  // comes after every entry of `rank` already here, so that each rank's order is kept.
  void add(int rank, std::span<const std::byte> list);
  bool empty() const { return entries_.empty(); }
  const std::vector<EnvelopeEntry>& entries() const { return entries_; }
  // The encoded envelope; the builder is empty again.
  std::vector<std::byte> take();

 private:
  std::vector<EnvelopeEntry> entries_;
};

// A decoded envelope, pointing into its bytes: rank 0 reuses one, so that taking an envelope
// allocates nothing once it has grown.
struct EnvelopeView {
  struct Entry {
    size_t first = 0, count = 0;  // its ranks: ranks[first, first + count)
    std::span<const std::byte> list;
  };
  std::vector<int> ranks;  // every entry's, one entry after another
  std::vector<Entry> entries;

  std::span<const int> ranks_of(const Entry& e) const {
    return std::span(ranks).subspan(e.first, e.count);
  }
};

std::vector<std::byte> encode_envelope(const std::vector<EnvelopeEntry>& entries);
bool is_envelope(std::span<const std::byte> bytes);
// Fills `out` (valid while `bytes` are). Throws InternalError naming `leader` for bytes that are
// no envelope, an entry without ranks or list, ranks out of [0, size) or not ascending, or a rank
// not in `behind` (the ranks `leader` leads); `out` is then not to be used.
void decode_envelope(std::span<const std::byte> bytes, int leader, int size,
                     std::span<const int> behind, EnvelopeView& out);

}  // namespace cohort
