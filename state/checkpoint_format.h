// The checkpoint file format. A 64-byte header, then the payload:
//
//   header:  "COHORTCK" | u32 version (1) | u32 header size (64) | u64 payload size |
//            SHA-256 of the payload (32 bytes) | 8 zero bytes
//   payload: u64 sequence | u64 commit count | u64 value count | per value, in tracking order:
//            str name | u8 kind | str type | then by kind
//              buffer:  u64 byte count, the bytes
//              object:  str serialized bytes
//              sampler: u64 dataset size | u64 seed | u64 epoch | u64 word count | the words
//
// (integers little-endian; str = u64 length + bytes). A file is good when its size is exactly
// 64 + payload size and the payload hashes to the stored digest.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "state/bytes.h"
#include "state/durable_file.h"

namespace cohort::elastic::detail {

constexpr uint32_t kCheckpointVersion = 1;
constexpr size_t kHeaderSize = 64;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const std::byte> bytes);
  std::array<std::byte, 32> finish();

 private:
  void* ctx_;
};

// Streams a payload into a DurableFile behind a header placeholder, hashing as it goes; small
// records are gathered into one write, large runs are written straight from the caller's memory.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(DurableFile& file);
  ByteWriter& records() { return pending_; }
  void raw(std::span<const std::byte> bytes);
  // Writes the header and commits the file.
  void finish();

 private:
  void flush();
  DurableFile& file_;
  Sha256 hash_;
  ByteWriter pending_;
  uint64_t payload_ = 0;
};

// A file that is not a good checkpoint (truncated, wrong length, bad checksum, not ours).
class DamagedCheckpoint : public Error {
 public:
  using Error::Error;
};

// The payload of a good checkpoint file (a view into it); throws DamagedCheckpoint otherwise.
std::span<const std::byte> verified_payload(std::span<const std::byte> file);

}  // namespace cohort::elastic::detail
