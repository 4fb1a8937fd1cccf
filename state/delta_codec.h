// How a rank's uncommitted records travel at commit: the words of the processed set it changed,
// as runs. A rank that works through its partition in order changes exactly "every position of
// its range that is not in the committed set" over whole words; every rank shares that committed
// set, so such words travel as a fill run of a few bytes and are rebuilt on arrival. Words that
// do not follow the rule travel as they are. The usual message is therefore tiny however many
// samples were recorded since the last commit.
#pragma once

#include <cstdint>
#include <vector>

#include "base/wire.h"
#include "state/processed_set.h"

namespace cohort::elastic::detail {

// The bits a fill puts in word w for a rank whose range is [lo, hi): its positions there that
// are not in the committed set.
uint64_t fill_bits(const ProcessedSet& set, uint64_t w, uint64_t lo, uint64_t hi);

// Writes the delta's words as runs against the sender's range [lo, hi).
void encode_delta(wire::Writer& out, const ProcessedSet::Delta& delta, const ProcessedSet& set,
                  uint64_t lo, uint64_t hi);
// Reads them back into words [first, first + count) of the delta, as sent by the rank whose range
// is [lo, hi). Throws wire::MalformedBytes if the runs do not add up.
ProcessedSet::Delta decode_delta(wire::Reader& in, const ProcessedSet& set, uint64_t lo,
                                 uint64_t hi);

}  // namespace cohort::elastic::detail
