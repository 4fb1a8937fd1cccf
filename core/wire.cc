#include "core/wire.h"

#include <cstring>

#include "cohort/errors.h"

namespace cohort::wire {
namespace {
// No control message field is legitimately larger; a bigger length is corruption.
constexpr uint32_t kMaxFieldElements = 1u << 26;
}  // namespace

void Writer::raw(const void* data, size_t n) {
  const auto* p = static_cast<const std::byte*>(data);
  bytes_.insert(bytes_.end(), p, p + n);
}

void Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

void Writer::i64s(const std::vector<int64_t>& values) {
  u32(static_cast<uint32_t>(values.size()));
  for (int64_t v : values) i64(v);
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
double Reader::f64() {
  double v;
  raw(&v, sizeof v);
  return v;
}

std::string Reader::str() {
  uint32_t n = u32();
  if (n > kMaxFieldElements) throw InternalError("malformed control message: string too long");
  std::string s(n, '\0');
  raw(s.data(), n);
  return s;
}

std::vector<int64_t> Reader::i64s() {
  uint32_t n = u32();
  if (n > kMaxFieldElements) throw InternalError("malformed control message: list too long");
  std::vector<int64_t> values(n);
  for (auto& v : values) v = i64();
  return values;
}

void Reader::expect_done() const {
  if (!done()) {
    throw InternalError("malformed control message: " + std::to_string(bytes_.size() - pos_) +
                        " unexpected trailing bytes");
  }
}

}  // namespace cohort::wire
