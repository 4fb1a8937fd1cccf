#include "state/checkpoint_format.h"

#include <openssl/evp.h>

#include <cstring>

namespace cohort::elastic::detail {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'H', 'O', 'R', 'T', 'C', 'K'};
constexpr size_t kFlushAt = 1 << 16;

std::vector<std::byte> header(uint64_t payload, const std::array<std::byte, 32>& digest) {
  ByteWriter h;
  h.raw(std::as_bytes(std::span(kMagic)));
  h.u32(kCheckpointVersion);
  h.u32(kHeaderSize);
  h.u64(payload);
  h.raw(digest);
  h.u64(0);
  return std::move(h.bytes());
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr ||
      EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 is not available from OpenSSL");
  }
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Sha256::update(std::span<const std::byte> bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size()) != 1) {
    throw Error("SHA-256 failed");
  }
}

std::array<std::byte, 32> Sha256::finish() {
  std::array<std::byte, 32> out{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_),
                         reinterpret_cast<unsigned char*>(out.data()), &length) != 1 ||
      length != out.size()) {
    throw Error("SHA-256 failed");
  }
  return out;
}

CheckpointWriter::CheckpointWriter(DurableFile& file) : file_(file) {
  std::vector<std::byte> placeholder(kHeaderSize);
  file_.append(placeholder);
}

void CheckpointWriter::flush() {
  auto& bytes = pending_.bytes();
  if (bytes.empty()) return;
  hash_.update(bytes);
  file_.append(bytes);
  payload_ += bytes.size();
  bytes.clear();
}

void CheckpointWriter::raw(std::span<const std::byte> bytes) {
  if (pending_.bytes().size() + bytes.size() <= kFlushAt) {
    pending_.raw(bytes);
    return;
  }
  flush();
  hash_.update(bytes);
  file_.append(bytes);
  payload_ += bytes.size();
}

void CheckpointWriter::finish() {
  flush();
  file_.write_at(0, header(payload_, hash_.finish()));
  file_.commit();
}

std::span<const std::byte> verified_payload(std::span<const std::byte> file) {
  if (file.size() < kHeaderSize) throw DamagedCheckpoint("shorter than its header");
  ByteReader in(file.first(kHeaderSize));
  auto magic = in.raw(sizeof kMagic);
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) {
    throw DamagedCheckpoint("not a Cohort checkpoint (bad magic)");
  }
  uint32_t version = in.u32(), header_size = in.u32();
  if (version != kCheckpointVersion || header_size != kHeaderSize) {
    throw DamagedCheckpoint("unknown format version " + std::to_string(version));
  }
  uint64_t payload = in.u64();
  auto digest = in.raw(32);
  if (payload != file.size() - kHeaderSize) {
    throw DamagedCheckpoint("holds " + std::to_string(file.size() - kHeaderSize) +
                            " payload bytes, its header says " + std::to_string(payload));
  }
  Sha256 hash;
  hash.update(file.subspan(kHeaderSize));
  auto actual = hash.finish();
  if (std::memcmp(actual.data(), digest.data(), actual.size()) != 0) {
    throw DamagedCheckpoint("checksum mismatch");
  }
  return file.subspan(kHeaderSize);
}

}  // namespace cohort::elastic::detail
