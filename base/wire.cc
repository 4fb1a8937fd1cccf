#include "base/wire.h"

#include <cstring>

#include "cohort/errors.h"

namespace cohort::wire {

void Writer::raw(const void* data, size_t n) {
  const auto* p = static_cast<const std::byte*>(data);
  bytes_.insert(bytes_.end(), p, p + n);
}

void Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

void Writer::i64s(const std::vector<int64_t>& values) {
  numbers(values);
}

void Writer::u32s(const std::vector<uint32_t>& values) {
  numbers(values);
}

void Reader::raw(void* out, size_t n) {
  if (n > bytes_.size() - pos_) {
    throw InternalError("malformed control message: needed " + std::to_string(n) +
                        " more bytes at offset " + std::to_string(pos_) + " of " +
                        std::to_string(bytes_.size()));
  }
  std::memcpy(out, bytes_.data() + pos_, n);
  pos_ += n;
}

size_t Reader::checked_length(uint32_t count, size_t width, const char* what,
                              const char* unit) const {
  // count < 2^32 and width <= 8: the product cannot overflow a 64-bit size_t.
  size_t n = static_cast<size_t>(count) * width;
  if (n > bytes_.size() - pos_) {
    throw InternalError("malformed control message: " + std::string(what) + " of " +
                        std::to_string(count) + " " + unit + " at offset " + std::to_string(pos_) +
                        " needs " + std::to_string(n) + " bytes but only " +
                        std::to_string(bytes_.size() - pos_) + " remain");
  }
  return n;
}

uint8_t Reader::u8() {
  uint8_t v;
  raw(&v, sizeof v);
  return v;
}
uint32_t Reader::u32() {
  uint32_t v;
  raw(&v, sizeof v);
  return v;
}
int32_t Reader::i32() {
  int32_t v;
  raw(&v, sizeof v);
  return v;
}
int64_t Reader::i64() {
  int64_t v;
  raw(&v, sizeof v);
  return v;
}
uint64_t Reader::u64() {
  uint64_t v;
  raw(&v, sizeof v);
  return v;
}
double Reader::f64() {
  double v;
  raw(&v, sizeof v);
  return v;
}

// Lengths are checked against the bytes that remain before anything is allocated: a 4-byte
// length must not make a short message allocate gigabytes.
std::string Reader::str() {
  uint32_t count = u32();
  size_t n = checked_length(count, 1, "a string", "bytes");
  std::string s(n, '\0');
  raw(s.data(), n);
  return s;
}

template <typename T>
std::vector<T> Reader::numbers() {
  uint32_t count = u32();
  size_t n = checked_length(count, sizeof(T), "a list", "numbers");
  std::vector<T> values(count);
  if (n > 0) raw(values.data(), n);
  return values;
}

std::vector<int64_t> Reader::i64s() {
  return numbers<int64_t>();
}

std::vector<uint32_t> Reader::u32s() {
  return numbers<uint32_t>();
}

void Reader::expect_done() const {
  if (!done()) {
    throw InternalError("malformed control message: " + std::to_string(bytes_.size() - pos_) +
                        " unexpected trailing bytes");
  }
}

}  // namespace cohort::wire
