#include "state/delta_codec.h"

#include <string>

namespace cohort::elastic::detail {
namespace {

enum class Run : uint8_t { kZeros = 0, kFill = 1, kLiteral = 2 };

}  // namespace

uint64_t fill_bits(const ProcessedSet& set, uint64_t w, uint64_t lo, uint64_t hi) {
  return ~set.committed_word(w) & range_mask(w, lo, hi);
}

void encode_delta(wire::Writer& out, const ProcessedSet::Delta& delta, const ProcessedSet& set,
                  uint64_t lo, uint64_t hi) {
  auto kind_of = [&](size_t i) {
    uint64_t bits = delta.words[i];
    if (bits == fill_bits(set, delta.first_word + i, lo, hi)) return Run::kFill;
    return bits == 0 ? Run::kZeros : Run::kLiteral;
  };
  wire::Writer runs;
  uint64_t count = 0;
  for (size_t i = 0; i < delta.words.size();) {
    Run kind = kind_of(i);
    size_t end = i + 1;
    while (end < delta.words.size() && kind_of(end) == kind) ++end;
    runs.u8(static_cast<uint8_t>(kind));
    runs.u64(end - i);
    if (kind == Run::kLiteral) {
      runs.raw(std::as_bytes(std::span(delta.words).subspan(i, end - i)));
    }
    ++count;
    i = end;
  }
  out.u64(delta.first_word);
  out.u64(delta.words.size());
  out.u64(count);
  out.raw(runs.bytes());
}

ProcessedSet::Delta decode_delta(wire::Reader& in, const ProcessedSet& set, uint64_t lo,
                                 uint64_t hi) {
  ProcessedSet::Delta delta;
  delta.first_word = in.u64();
  uint64_t size = in.u64(), runs = in.u64();
  if (delta.first_word > set.num_words() || size > set.num_words() - delta.first_word) {
    throw wire::MalformedBytes("delta words outside the processed set");
  }
  delta.words.assign(size, 0);
  uint64_t at = 0;
  for (uint64_t r = 0; r < runs; ++r) {
    auto kind = static_cast<Run>(in.u8());
    uint64_t length = in.u64();
    if (length > size - at) throw wire::MalformedBytes("delta runs longer than their words");
    for (uint64_t i = at; i < at + length; ++i) {
      if (kind == Run::kFill) {
        delta.words[i] = fill_bits(set, delta.first_word + i, lo, hi);
      } else if (kind == Run::kLiteral) {
        delta.words[i] = in.u64();
      } else if (kind != Run::kZeros) {
        throw wire::MalformedBytes("unknown delta run kind");
      }
    }
    at += length;
  }
  if (at != size) throw wire::MalformedBytes("delta runs shorter than their words");
  return delta;
}

}  // namespace cohort::elastic::detail
