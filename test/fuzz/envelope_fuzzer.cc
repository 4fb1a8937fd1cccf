// Envelopes, which a host's leader sends rank 0 with its ranks' request lists
// (core/envelope.h; COHORT_CONTROL_LEADERS=1): the decoder must refuse corrupt bytes with
// InternalError, whatever ranks they name, and what it accepts must survive a round trip; the
// lists inside go on to rank 0's request-list decoder, fuzzed here too.
#include <vector>

#include "core/envelope.h"
#include "core/request.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;

namespace {

// What rank 0 would make of it: leader 8 of a job of 32, leading ranks 8 to 15.
constexpr int kLeader = 8;
constexpr int kSize = 32;
const std::vector<int> kBehind = {8, 9, 10, 11, 12, 13, 14, 15};

std::vector<EnvelopeEntry> entries_of(const EnvelopeView& view) {
  std::vector<EnvelopeEntry> entries;
  for (const auto& e : view.entries) {
    auto ranks = view.ranks_of(e);
    entries.push_back({{ranks.begin(), ranks.end()}, {e.list.begin(), e.list.end()}});
  }
  return entries;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::decode_or_refuse([&] {
    EnvelopeView view;
    decode_envelope(fuzz::bytes(data, size), kLeader, kSize, kBehind, view);
    auto once = encode_envelope(entries_of(view));
    EnvelopeView again;
    decode_envelope(once, kLeader, kSize, kBehind, again);
    fuzz::require(encode_envelope(entries_of(again)) == once);
    for (const auto& e : view.entries) decode_request_list(e.list);
  });
  return 0;
}
