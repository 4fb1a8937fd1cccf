// Little-endian records for what the state layer exchanges between ranks and stores in
// checkpoints: fixed-width integers, length-prefixed strings and raw byte runs. A reader never
// reads past its input: truncated or inconsistent bytes raise MalformedBytes, which every caller
// turns into the error its own context calls for.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/errors.h"

namespace cohort::elastic::detail {

static_assert(std::endian::native == std::endian::little,
              "state records and checkpoints are stored in the machine's (little-endian) order");

// Bytes that do not decode. Internal: callers catch it and raise a typed cohort error.
class MalformedBytes : public Error {
 public:
  using Error::Error;
};

class ByteWriter {
 public:
  void u8(uint8_t v) { put(&v, 1); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    put(s.data(), s.size());
  }
  void raw(std::span<const std::byte> bytes) { put(bytes.data(), bytes.size()); }

  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  // Out of line on purpose: inlined where the size is a constant, GCC 12 at -O3 reports writes
  // out of bounds inside std::vector's growth that cannot happen (-Warray-bounds and
  // -Wstringop-overflow false positives), which -Werror turns into a failed Release build.
  [[gnu::noinline]] void put(const void* p, size_t n) {
    size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n > 0) std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<std::byte> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  std::string str() {
    auto b = raw(u64());
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  std::span<const std::byte> raw(uint64_t n) {
    if (n > remaining()) {
      throw MalformedBytes("truncated: " + std::to_string(n) + " bytes wanted, " +
                           std::to_string(remaining()) + " left");
    }
    auto out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }

  size_t remaining() const { return bytes_.size() - at_; }
  bool done() const { return at_ == bytes_.size(); }

 private:
  template <typename T>
  T get() {
    T v;
    std::memcpy(&v, raw(sizeof v).data(), sizeof v);
    return v;
  }
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

}  // namespace cohort::elastic::detail
