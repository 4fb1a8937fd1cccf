#include "state/checkpoint_format.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace cohort::elastic::detail {
namespace {

constexpr char kMagic[8] = {'C', 'O', 'H', 'O', 'R', 'T', 'C', 'K'};
constexpr size_t kFlushAt = 1 << 16;

std::vector<std::byte> header(uint64_t payload, const std::array<std::byte, 32>& digest) {
  wire::Writer h;
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

CheckpointHeader parse_checkpoint_header(std::span<const std::byte> bytes, uint64_t file_size) {
  uint64_t have = std::min<uint64_t>(bytes.size(), file_size);
  if (have < kHeaderSize) {
    throw DamagedCheckpoint("holds " + std::to_string(have) + " bytes, shorter than its " +
                            std::to_string(kHeaderSize) + "-byte header");
  }
  wire::Reader in(bytes.first(kHeaderSize));
  auto magic = in.raw(sizeof kMagic);
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) {
    throw DamagedCheckpoint("not a Cohort checkpoint (bad magic)");
  }
  CheckpointHeader h;
  h.version = in.u32();
  h.header_size = in.u32();
  h.payload_size = in.u64();
  auto digest = in.raw(h.digest.size());
  std::memcpy(h.digest.data(), digest.data(), h.digest.size());
  // The size before the version: a damaged size field must not read as an unknown version.
  if (h.header_size != kHeaderSize) {
    throw DamagedCheckpoint("damaged header: its header size field says " +
                            std::to_string(h.header_size) + " bytes, not " +
                            std::to_string(kHeaderSize) + " (version field " +
                            std::to_string(h.version) + ")");
  }
  if (h.version != kCheckpointVersion) {
    throw DamagedCheckpoint("unknown format version " + std::to_string(h.version) +
                            " (this build reads version " + std::to_string(kCheckpointVersion) +
                            ")");
  }
  if (h.payload_size != file_size - kHeaderSize) {
    throw DamagedCheckpoint("holds " + std::to_string(file_size - kHeaderSize) +
                            " payload bytes, its header's payload size field says " +
                            std::to_string(h.payload_size));
  }
  return h;
}

namespace {

void check_digest(const CheckpointHeader& h, std::span<const std::byte> payload) {
  Sha256 hash;
  hash.update(payload);
  auto actual = hash.finish();
  if (std::memcmp(actual.data(), h.digest.data(), actual.size()) != 0) {
    throw DamagedCheckpoint("checksum mismatch");
  }
}

// The most bytes a payload may have to be read at all: this host's memory (a larger one could
// not be held, let alone loaded into tracked values of the same size).
uint64_t payload_cap() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace

std::span<const std::byte> verified_payload(std::span<const std::byte> file) {
  CheckpointHeader h = parse_checkpoint_header(file, file.size());
  std::span<const std::byte> payload = file.subspan(kHeaderSize);
  check_digest(h, payload);
  return payload;
}

std::vector<std::byte> read_verified_payload(const std::filesystem::path& path) {
  try {
    auto [dir, name] = files::Directory::of_file(path.string());
    return read_verified_payload(dir, name);
  } catch (const CheckpointError&) {
    throw;
  } catch (const DamagedCheckpoint&) {
    throw;
  } catch (const Error& e) {
    throw CheckpointError("checkpoint " + path.string() + ": " + e.what());
  }
}

std::vector<std::byte> read_verified_payload(const files::Directory& dir, const std::string& name) {
  InputFile file(dir, name);
  const std::string& path = file.path();
  std::array<std::byte, kHeaderSize> head{};
  size_t got = file.read_at(0, head);
  CheckpointHeader h = parse_checkpoint_header(std::span(head).first(got), file.size());
  if (h.payload_size > payload_cap()) {
    throw CheckpointError("checkpoint " + path + ": its payload of " +
                          std::to_string(h.payload_size) + " bytes is more than this host's " +
                          std::to_string(payload_cap()) + " bytes of memory");
  }
  std::vector<std::byte> payload;
  try {
    payload.resize(static_cast<size_t>(h.payload_size));
  } catch (const std::bad_alloc&) {
    throw CheckpointError("checkpoint " + path + ": cannot allocate " +
                          std::to_string(h.payload_size) + " bytes to read it");
  }
  got = file.read_at(kHeaderSize, payload);
  if (got != payload.size()) {
    throw DamagedCheckpoint("cut while being read: " + std::to_string(kHeaderSize + got) + " of " +
                            std::to_string(file.size()) + " bytes");
  }
  check_digest(h, payload);
  return payload;
}

}  // namespace cohort::elastic::detail
