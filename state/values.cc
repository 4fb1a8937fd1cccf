#include "state/values.h"

#include <cstring>
#include <utility>

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
                         std::function<std::span<std::byte>()> view, ValueScope scope)
    : name_(std::move(name)),
      dtype_(dtype),
      scope_(scope),
      view_(std::move(view)),
      snapshot_(view_().size()) {}

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

void BufferValue::take_snapshot(bool keep_previous) {
  std::span<std::byte> bytes = live();
  has_previous_ = keep_previous && has_snapshot_;
  if (has_previous_) {
    previous_.resize(snapshot_.size());
    std::swap(previous_, snapshot_);
  }
  if (!bytes.empty()) std::memcpy(snapshot_.data(), bytes.data(), bytes.size());
  has_snapshot_ = true;
}

void BufferValue::step_back() {
  if (!has_previous_) return;
  std::swap(previous_, snapshot_);
  has_previous_ = false;
  restore_snapshot();
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

void ObjectValue::set_snapshot(std::string bytes, bool keep_previous) {
  has_previous_ = keep_previous && has_snapshot_;
  if (has_previous_) std::swap(previous_, snapshot_);
  snapshot_ = std::move(bytes);
  has_snapshot_ = true;
}

std::function<void()> ObjectValue::stage_step_back() {
  if (!has_previous_) return [] {};
  std::function<void()> assign = parse(previous_, "its previous commit");
  return [this, assign = std::move(assign)] {
    assign();
    std::swap(previous_, snapshot_);
    has_previous_ = false;
  };
}

}  // namespace cohort::elastic::detail
