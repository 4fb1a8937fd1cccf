// Sharded values in durable checkpoints (state/checkpoint.cc). Every rank writes the committed
// copy of its own ranges into a part file beside the checkpoint file; a load gives every rank its
// range in the current world, whatever the world size at the save, read from just the parts that
// hold it: no rank reads or holds the whole of a sharded value.
//
//   <dir>/ckpt-<sequence>.cohort                  rank 0: every value; a sharded one as its type,
//                                                 its length and the world size it was saved at
//   <dir>/ckpt-<sequence>.rank-<r>-of-<n>.part    rank r of n: its range of every sharded value
//
// A part file has the checkpoint format's header and checksum (state/checkpoint_format.h) over
//   u64 sequence | u64 commit count | u64 rank | u64 size | u64 value count | per value, in
//   tracking order: str name | str type | u64 length | u64 begin | u64 end | the bytes
// The parts are written before the checkpoint file, so a checkpoint file names a save whose
// parts were all in place. The directory must be the same one on every rank (a shared file system
// when the ranks are on several machines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/directory.h"
#include "cohort/elastic/sharded.h"

namespace cohort::elastic::detail {

struct StateImpl;

// "ckpt-<sequence, 20 digits>.rank-<rank>-of-<size>.part".
std::string part_name(uint64_t sequence, int rank, int size);
// The sequence in a part file's name; nothing for any other name.
std::optional<uint64_t> part_sequence_of(const std::string& name);

// Every rank: writes its part of checkpoint `sequence` (the last commit's own copies) into `dir`.
// Throws InvalidArgument if this rank's copies are not of the last commit in this world, and
// CheckpointError for I/O errors, naming the file.
void write_part(const StateImpl& s, const files::Directory& dir, uint64_t sequence);

// Every sharded value's bytes for this rank's range in the current world, read from the parts of
// checkpoint `sequence` (commit `commit_count`) saved by a world of `saved_size` ranks.
struct StagedShards {
  std::vector<ShardRange> ranges;             // per sharded value
  std::vector<std::vector<std::byte>> bytes;  // per sharded value
};
// Throws DamagedCheckpoint naming the part file when one is damaged, cut, missing or does not
// belong to that checkpoint, CheckpointError when one cannot be read.
StagedShards read_parts(const StateImpl& s, const files::Directory& dir, uint64_t sequence,
                        uint64_t commit_count, int saved_size);
// Makes the staged ranges every sharded value's live range (no communication).
void apply_parts(StateImpl& s, const StagedShards& staged);

}  // namespace cohort::elastic::detail
