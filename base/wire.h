// The project's one byte codec: little-endian fixed-width integers, strings and lists behind a
// u64 length, raw byte runs. Control messages and the rendezvous protocol (between processes of
// one build) use it, and so do the state layer's records and checkpoint files, whose bytes on disk
// it must therefore keep (state/checkpoint_format.h).
//
// The reader checks every length against what is left before it allocates or reads, so corrupt or
// hostile bytes raise MalformedBytes instead of reading out of bounds or allocating more than the
// input holds. Callers turn MalformedBytes into the error their context calls for.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/errors.h"

namespace cohort::wire {

static_assert(std::endian::native == std::endian::little,
              "messages, records and checkpoints are in the machine's (little-endian) order");

// Bytes that do not decode.
class MalformedBytes : public Error {
 public:
  using Error::Error;
};

class Writer {
 public:
  void u8(uint8_t v) { put(&v, sizeof v); }
  void u32(uint32_t v) { put(&v, sizeof v); }
  void i32(int32_t v) { put(&v, sizeof v); }
  void i64(int64_t v) { put(&v, sizeof v); }
  void u64(uint64_t v) { put(&v, sizeof v); }
  void f64(double v) { put(&v, sizeof v); }
  void str(std::string_view s);
  void raw(std::span<const std::byte> bytes) { put(bytes.data(), bytes.size()); }
  void i64s(const std::vector<int64_t>& values);
  void u32s(const std::vector<uint32_t>& values);
  // An unsigned LEB128 number: 7 bits a byte, low bits first (1 byte below 128).
  void varint(uint64_t v);

  const std::vector<std::byte>& bytes() const { return bytes_; }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  // Out of line on purpose: inlined where the size is a constant, GCC 12 at -O3 reports writes
  // out of bounds inside std::vector's growth that cannot happen (-Warray-bounds and
  // -Wstringop-overflow false positives), which -Werror turns into a failed Release build.
  [[gnu::noinline]] void put(const void* data, size_t n);
  template <typename T>
  void numbers(const std::vector<T>& values) {
    u64(values.size());
    put(values.data(), values.size() * sizeof(T));
  }
  std::vector<std::byte> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  uint8_t u8();
  uint32_t u32();
  int32_t i32();
  int64_t i64();
  uint64_t u64();
  double f64();
  std::string str();
  std::vector<int64_t> i64s();
  std::vector<uint32_t> u32s();
  uint64_t varint();
  // A varint count of items that each take at least one more byte: throws unless that many
  // bytes remain, so that a hostile count allocates nothing.
  uint64_t varcount(const char* what);
  // The next `n` bytes, in place.
  std::span<const std::byte> raw(uint64_t n);

  size_t remaining() const { return bytes_.size() - pos_; }
  bool done() const { return pos_ == bytes_.size(); }
  // Throws unless every byte was consumed: trailing bytes mean the two sides disagree on the
  // format.
  void expect_done() const;

 private:
  template <typename T>
  T fixed();
  // The byte size of `count` items of `width` bytes; throws unless that many bytes remain.
  size_t checked_length(uint64_t count, size_t width, const char* what, const char* unit) const;
  template <typename T>
  std::vector<T> numbers();
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

// Decodes the whole of `bytes` with `read(Reader&)`, which may throw MalformedBytes too. Bytes
// that do not decode, or are left over, raise `Refusal` ("<what>: <reason>"): the error the
// caller's context calls for.
template <typename Refusal, typename Read>
auto decode(std::span<const std::byte> bytes, std::string_view what, Read&& read) {
  Reader rd(bytes);
  try {
    auto out = read(rd);
    rd.expect_done();
    return out;
  } catch (const MalformedBytes& e) {
    throw Refusal(std::string(what) + ": " + e.what());
  }
}

}  // namespace cohort::wire
