// The kinds of value a State tracks, each with its own snapshot: numeric buffers (a preallocated
// copy) and serializable objects (bytes). Samplers keep their committed state themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "cohort/elastic/state.h"
#include "cohort/types.h"

namespace cohort::elastic::detail {

enum class ValueKind : uint8_t { kBuffer = 1, kObject = 2, kSampler = 3, kSharded = 4 };
std::string_view to_string(ValueKind kind);

class BufferValue {
 public:
  // Allocates (and touches) the snapshot now, so that commit is a plain memcpy.
  BufferValue(std::string name, DataType dtype, std::function<std::span<std::byte>()> view);

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  uint64_t num_bytes() const { return snapshot_.size(); }
  // The tracked memory; throws InvalidArgument if its size changed since track().
  std::span<std::byte> live() const;
  std::span<const std::byte> snapshot() const { return snapshot_; }
  std::span<std::byte> mutable_snapshot() { return snapshot_; }
  bool has_snapshot() const { return has_snapshot_; }

  void take_snapshot();
  void restore_snapshot();
  // Marks the snapshot as filled by the caller (checkpoint load).
  void set_has_snapshot() { has_snapshot_ = true; }

 private:
  std::string name_;
  DataType dtype_;
  std::function<std::span<std::byte>()> view_;
  std::vector<std::byte> snapshot_;
  bool has_snapshot_ = false;
};

class ObjectValue {
 public:
  ObjectValue(std::string name, ObjectAccess access);

  const std::string& name() const { return name_; }
  const std::string& type_name() const { return access_.type_name; }
  const std::string& snapshot() const { return snapshot_; }
  bool has_snapshot() const { return has_snapshot_; }

  // The object serialized as it is now (the user's serializer may throw).
  std::string save() const { return access_.save(); }
  // Parses bytes into a staged value; the returned function assigns it. Throws InvalidArgument
  // naming this value if the bytes do not parse as its type.
  std::function<void()> parse(std::string_view bytes, std::string_view source) const;
  void set_snapshot(std::string bytes);

 private:
  std::string name_;
  ObjectAccess access_;
  std::string snapshot_;
  bool has_snapshot_ = false;
};

}  // namespace cohort::elastic::detail
