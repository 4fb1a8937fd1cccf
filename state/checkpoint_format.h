// The checkpoint file format. A 64-byte header, then the payload:
//
//   header:  "COHORTCK" | u32 version (1) | u32 header size (64) | u64 payload size |
//            SHA-256 of the payload (32 bytes) | 8 zero bytes
//   payload: u64 sequence | u64 commit count | u64 value count | per value, in tracking order:
//            str name | u8 kind | str type | then by kind
//              buffer:  u64 byte count, the bytes
//              object:  str serialized bytes
//              sampler: u64 dataset size | u64 seed | u64 epoch | u64 word count | the words
//              sharded: u64 length | u64 world size at the save (the bytes: in the part files of
//                       state/checkpoint_shards.h, which have this header too)
//
// (integers little-endian; str = u64 length + bytes). A file is good when its size is exactly
// 64 + payload size and the payload hashes to the stored digest. The header's fields are checked
// in order (magic, header size, version, payload size) before anything else is read, so a damaged
// field is named as such and no size from the file decides an allocation.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/wire.h"
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
  wire::Writer& records() { return pending_; }
  void raw(std::span<const std::byte> bytes);
  // Writes the header and commits the file.
  void finish();

 private:
  void flush();
  DurableFile& file_;
  Sha256 hash_;
  wire::Writer pending_;
  uint64_t payload_ = 0;
};

// A file that is not a good checkpoint (truncated, wrong length, bad checksum, not ours).
class DamagedCheckpoint : public Error {
 public:
  using Error::Error;
};

struct CheckpointHeader {
  uint32_t version = 0;
  uint32_t header_size = 0;
  uint64_t payload_size = 0;
  std::array<std::byte, 32> digest{};
};

// Parses the header at the start of `bytes`, the beginning of a file of `file_size` bytes
// (fuzzers pass a whole file: `parse_checkpoint_header(data, data.size())`), checking each field
// in order; throws DamagedCheckpoint naming the first bad one, and nothing else.
CheckpointHeader parse_checkpoint_header(std::span<const std::byte> bytes, uint64_t file_size);

// The payload of a good checkpoint file held in memory (a view into it); throws DamagedCheckpoint
// otherwise.
std::span<const std::byte> verified_payload(std::span<const std::byte> file);

// Reads the checkpoint file `name` of `dir` and returns its verified payload. Reads are bounded by
// the file's size at open and by this host's memory; the payload is read only after its header
// passed. Throws DamagedCheckpoint (a file that is not a good checkpoint), NotRegularFile (a path
// that is not a regular file: never followed, opened without blocking), or CheckpointError (it
// cannot be read).
std::vector<std::byte> read_verified_payload(const files::Directory& dir, const std::string& name);
// The same for the file `path` names (its directory as the system resolves it).
std::vector<std::byte> read_verified_payload(const std::filesystem::path& path);

}  // namespace cohort::elastic::detail
