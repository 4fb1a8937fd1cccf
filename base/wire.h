// Byte-level encoding for control messages: little-endian integers, length-prefixed strings.
// The reader checks every length against what is left before it allocates or reads, so a corrupt
// or hostile message raises InternalError instead of reading out of bounds or allocating more
// than the message holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace cohort::wire {

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s);
  void i64s(const std::vector<int64_t>& values);
  void u32s(const std::vector<uint32_t>& values);

  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  void raw(const void* data, size_t n);
  template <typename T>
  void numbers(const std::vector<T>& values) {
    u32(static_cast<uint32_t>(values.size()));
    raw(values.data(), values.size() * sizeof(T));
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

  bool done() const { return pos_ == bytes_.size(); }
  // Throws unless every byte was consumed: trailing bytes mean the peers disagree on the format.
  void expect_done() const;

 private:
  void raw(void* out, size_t n);
  // The byte size of `count` items of `width` bytes; throws unless that many bytes remain.
  size_t checked_length(uint32_t count, size_t width, const char* what, const char* unit) const;
  template <typename T>
  std::vector<T> numbers();
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

}  // namespace cohort::wire
