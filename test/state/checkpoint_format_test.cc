// The checkpoint header parser on bytes, field by field in the order it checks them, and the
// bounded reader on files whose header lies about their size.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "state/checkpoint_format.h"

namespace fs = std::filesystem;
using Catch::Contains;
using namespace cohort::elastic::detail;
namespace wire = cohort::wire;

namespace {

// A good checkpoint file of `payload`: the header as CheckpointWriter writes it, then the payload.
std::vector<std::byte> good_file(const std::string& payload) {
  auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
  Sha256 hash;
  hash.update(bytes);
  wire::Writer w;
  w.raw(std::as_bytes(std::span("COHORTCK", 8)));
  w.u32(kCheckpointVersion);
  w.u32(kHeaderSize);
  w.u64(payload.size());
  w.raw(hash.finish());
  w.u64(0);
  w.raw(bytes);
  return std::move(w.bytes());
}

template <typename T>
void put(std::vector<std::byte>& file, size_t at, T value) {
  std::memcpy(file.data() + at, &value, sizeof value);
}

std::string why_damaged(const std::vector<std::byte>& file) {
  try {
    verified_payload(file);
  } catch (const DamagedCheckpoint& e) {
    return e.what();
  }
  return "not damaged";
}

}  // namespace

TEST_CASE("checkpoint header: a good one parses, each damaged field is named in order") {
  const std::vector<std::byte> good = good_file("the payload");
  CheckpointHeader h = parse_checkpoint_header(good, good.size());
  CHECK(h.version == 1);
  CHECK(h.header_size == 64);
  CHECK(h.payload_size == 11);
  auto payload = verified_payload(good);
  CHECK(std::string(reinterpret_cast<const char*>(payload.data()), payload.size()) ==
        "the payload");

  CHECK_THAT(why_damaged(std::vector<std::byte>(good.begin(), good.begin() + 63)),
             Contains("holds 63 bytes, shorter than its 64-byte header"));
  auto file = good;
  file[0] = std::byte{'X'};
  CHECK_THAT(why_damaged(file), Contains("bad magic"));

  file = good;
  put<uint32_t>(file, 12, 77);
  CHECK_THAT(why_damaged(file),
             Contains("header size field says 77 bytes, not 64 (version field 1)"));
  put<uint32_t>(file, 8, 9);  // both damaged: the size is checked first
  CHECK_THAT(why_damaged(file), Contains("header size field says 77 bytes"));

  file = good;
  put<uint32_t>(file, 8, 2);
  CHECK_THAT(why_damaged(file), Contains("unknown format version 2 (this build reads version 1)"));

  file = good;
  put<uint64_t>(file, 16, UINT64_MAX);
  CHECK_THAT(why_damaged(file), Contains("holds 11 payload bytes, its header's payload size field "
                                         "says 18446744073709551615"));

  file = good;
  file.back() ^= std::byte{1};
  CHECK_THAT(why_damaged(file), Contains("checksum mismatch"));

  // A header given alone is checked against the file size it is given.
  CHECK_THROWS_AS(parse_checkpoint_header(std::span(good).first(64), 1000), DamagedCheckpoint);
  CHECK(parse_checkpoint_header(std::span(good).first(64), good.size()).payload_size == 11);
}

TEST_CASE("checkpoint reader: a header's sizes never decide what is allocated or read") {
  fs::path dir = fs::temp_directory_path() / ("cohort-ckpt-format-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::vector<std::byte>& bytes) {
    fs::path p = dir / "ckpt-00000000000000000001.cohort";
    std::ofstream(p, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return p;
  };
  std::vector<std::byte> good = good_file("the payload");
  auto payload = read_verified_payload(write(good));
  CHECK(payload.size() == 11);

  // Only the header, claiming an exabyte: refused from the header, nothing allocated.
  std::vector<std::byte> header_only(good.begin(), good.begin() + 64);
  put<uint64_t>(header_only, 16, uint64_t{1} << 60);
  CHECK_THROWS_WITH(read_verified_payload(write(header_only)),
                    Contains("holds 0 payload bytes") && Contains("says 1152921504606846976"));
  // Longer than its header says: a file is read no further than its own size, and refused.
  std::vector<std::byte> longer = good;
  longer.resize(longer.size() + 100);
  CHECK_THROWS_WITH(read_verified_payload(write(longer)), Contains("holds 111 payload bytes"));
  CHECK_THROWS_WITH(read_verified_payload(write({})), Contains("holds 0 bytes"));
  fs::remove_all(dir);
}
