#include "state/values.h"

#include <cstring>

#include "cohort/errors.h"

namespace cohort::elastic::detail {

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::kBuffer:
      return "buffer";
    case ValueKind::kObject:
      return "object";
    case ValueKind::kSampler:
      return "elastic sampler";
    case ValueKind::kSharded:
      return "sharded buffer";
  }
  return "unknown";
}

BufferValue::BufferValue(std::string name, DataType dtype,
                         std::function<std::span<std::byte>()> view)
    : name_(std::move(name)), dtype_(dtype), view_(std::move(view)), snapshot_(view_().size()) {}

std::span<std::byte> BufferValue::live() const {
  std::span<std::byte> bytes = view_();
  if (bytes.size() != snapshot_.size()) {
    size_t element = element_size(dtype_);
    throw InvalidArgument("tracked buffer '" + name_ + "' now has " +
                          std::to_string(bytes.size() / element) + " elements but had " +
                          std::to_string(snapshot_.size() / element) +
                          " when tracked (a tracked buffer keeps its size)");
  }
  return bytes;
}

void BufferValue::take_snapshot() {
  std::span<std::byte> bytes = live();
  if (!bytes.empty()) std::memcpy(snapshot_.data(), bytes.data(), bytes.size());
  has_snapshot_ = true;
}

void BufferValue::restore_snapshot() {
  std::span<std::byte> bytes = live();
  if (!bytes.empty()) std::memcpy(bytes.data(), snapshot_.data(), bytes.size());
}

ObjectValue::ObjectValue(std::string name, ObjectAccess access)
    : name_(std::move(name)), access_(std::move(access)) {}

std::function<void()> ObjectValue::parse(std::string_view bytes, std::string_view source) const {
  try {
    return access_.load(bytes);
  } catch (const std::exception& e) {
    throw InvalidArgument("value '" + name_ + "': " + std::string(source) + " does not parse as " +
                          access_.type_name + " (" + e.what() + ")");
  }
}

void ObjectValue::set_snapshot(std::string bytes) {
  snapshot_ = std::move(bytes);
  has_snapshot_ = true;
}

}  // namespace cohort::elastic::detail
