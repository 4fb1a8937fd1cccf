// Checkpoint file headers (state/checkpoint_format.h), read from disk at restore: the header
// alone (parse_checkpoint_header) and the whole file's check (verified_payload). The first input
// byte picks whether the harness repairs the header's payload size and digest for the rest, so
// that both the refusals (DamagedCheckpoint) and the accepting path are reached.
#include <cstring>

#include "state/checkpoint_format.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;
using namespace cohort::elastic::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<std::byte> file(reinterpret_cast<const std::byte*>(data + 1),
                              reinterpret_cast<const std::byte*>(data + size));
  if ((data[0] & 1) && file.size() >= kHeaderSize) {
    // Offsets: magic (8), version (4), header size (4), payload size (8), digest (32).
    uint64_t payload = file.size() - kHeaderSize;
    std::memcpy(file.data() + 16, &payload, sizeof payload);
    Sha256 hash;
    hash.update(std::span(file).subspan(kHeaderSize));
    auto digest = hash.finish();
    std::memcpy(file.data() + 24, digest.data(), digest.size());
  }
  fuzz::decode_or_refuse([&] {
    CheckpointHeader header = parse_checkpoint_header(file, file.size());
    fuzz::require(header.payload_size + kHeaderSize == file.size());
  });
  fuzz::decode_or_refuse([&] {
    auto payload = verified_payload(file);
    fuzz::require(payload.size() + kHeaderSize == file.size());
  });
  return 0;
}
