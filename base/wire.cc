#include "base/wire.h"

#include <cstring>

namespace cohort::wire {

void Writer::put(const void* data, size_t n) {
  size_t at = bytes_.size();
  bytes_.resize(at + n);
  if (n > 0) std::memcpy(bytes_.data() + at, data, n);
}

void Writer::str(std::string_view s) {
  u64(s.size());
  put(s.data(), s.size());
}

void Writer::i64s(const std::vector<int64_t>& values) {
  numbers(values);
}

void Writer::u32s(const std::vector<uint32_t>& values) {
  numbers(values);
}

void Writer::varint(uint64_t v) {
  uint8_t out[10];
  size_t n = 0;
  for (; v >= 0x80; v >>= 7) out[n++] = static_cast<uint8_t>(v | 0x80);
  out[n++] = static_cast<uint8_t>(v);
  put(out, n);
}

std::span<const std::byte> Reader::raw(uint64_t n) {
  if (n > remaining()) {
    throw MalformedBytes("truncated: needed " + std::to_string(n) + " more bytes at offset " +
                         std::to_string(pos_) + " of " + std::to_string(bytes_.size()));
  }
  auto out = bytes_.subspan(pos_, n);
  pos_ += n;
  return out;
}

template <typename T>
T Reader::fixed() {
  T v;
  std::memcpy(&v, raw(sizeof v).data(), sizeof v);
  return v;
}

uint8_t Reader::u8() {
  return fixed<uint8_t>();
}
uint32_t Reader::u32() {
  return fixed<uint32_t>();
}
int32_t Reader::i32() {
  return fixed<int32_t>();
}
int64_t Reader::i64() {
  return fixed<int64_t>();
}
uint64_t Reader::u64() {
  return fixed<uint64_t>();
}
double Reader::f64() {
  return fixed<double>();
}

// Lengths are checked against the bytes that remain before anything is allocated: an 8-byte
// length must not make a short message allocate gigabytes. Divided, not multiplied: a u64 count
// times the width could overflow.
size_t Reader::checked_length(uint64_t count, size_t width, const char* what,
                              const char* unit) const {
  if (count > remaining() / width) {
    throw MalformedBytes(std::string(what) + " of " + std::to_string(count) + " " + unit +
                         " at offset " + std::to_string(pos_) + " is longer than the rest: only " +
                         std::to_string(remaining()) + " remain");
  }
  return static_cast<size_t>(count) * width;
}

std::string Reader::str() {
  uint64_t count = u64();
  auto b = raw(checked_length(count, 1, "a string", "bytes"));
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

template <typename T>
std::vector<T> Reader::numbers() {
  uint64_t count = u64();
  auto b = raw(checked_length(count, sizeof(T), "a list", "numbers"));
  std::vector<T> values(static_cast<size_t>(count));
  if (!b.empty()) std::memcpy(values.data(), b.data(), b.size());
  return values;
}

std::vector<int64_t> Reader::i64s() {
  return numbers<int64_t>();
}

std::vector<uint32_t> Reader::u32s() {
  return numbers<uint32_t>();
}

uint64_t Reader::varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t byte = u8();
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  throw MalformedBytes("a varint at offset " + std::to_string(pos_) + " runs past 10 bytes");
}

uint64_t Reader::varcount(const char* what) {
  uint64_t count = varint();
  checked_length(count, 1, what, "items");
  return count;
}

void Reader::expect_done() const {
  if (!done()) {
    throw MalformedBytes(std::to_string(remaining()) + " unexpected trailing bytes");
  }
}

}  // namespace cohort::wire
