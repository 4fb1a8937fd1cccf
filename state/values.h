// The kinds of value a State tracks, each with its own snapshot: numeric buffers (a preallocated
// copy) and serializable objects (bytes), and the generation before it while a commit's sharded
// replicas travel. Samplers keep their committed state themselves.
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
  BufferValue(std::string name, DataType dtype, std::function<std::span<std::byte>()> view,
              ValueScope scope = ValueScope::kPerRank);

  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  ValueScope scope() const { return scope_; }
  uint64_t num_bytes() const { return snapshot_.size(); }
  // The tracked memory; throws InvalidArgument if its size changed since track().
  std::span<std::byte> live() const;
  std::span<const std::byte> snapshot() const { return snapshot_; }
  std::span<std::byte> mutable_snapshot() { return snapshot_; }
  bool has_snapshot() const { return has_snapshot_; }

  // With `keep_previous`, the snapshot it replaces stays as the previous generation (a commit
  // whose sharded replicas still travel); otherwise any previous generation is dropped.
  void take_snapshot(bool keep_previous = false);
  void restore_snapshot();
  // The snapshot stays the last commit; the previous generation is dropped (a sync that kept the
  // buffer as it is).
  void keep_snapshot() { has_previous_ = false; }
  // Back to the previous generation: it becomes the snapshot and the live values.
  void step_back();
  bool has_previous() const { return has_previous_; }
  // Marks the snapshot as filled by the caller (checkpoint load).
  void set_has_snapshot() { has_snapshot_ = true; }

 private:
  std::string name_;
  DataType dtype_;
  ValueScope scope_;
  std::function<std::span<std::byte>()> view_;
  std::vector<std::byte> snapshot_;
  std::vector<std::byte> previous_;  // allocated on the first commit that keeps one
  bool has_snapshot_ = false;
  bool has_previous_ = false;
};

class ObjectValue {
 public:
  ObjectValue(std::string name, ObjectAccess access);

  const std::string& name() const { return name_; }
  const std::string& type_name() const { return access_.type_name; }
  ValueScope scope() const { return access_.scope; }
  const std::string& snapshot() const { return snapshot_; }
  bool has_snapshot() const { return has_snapshot_; }

  // The object serialized as it is now (the user's serializer may throw).
  std::string save() const { return access_.save(); }
  // Parses bytes into a staged value; the returned function assigns it. Throws InvalidArgument
  // naming this value if the bytes do not parse as its type.
  std::function<void()> parse(std::string_view bytes, std::string_view source) const;
  // `keep_previous` as for BufferValue::take_snapshot.
  void set_snapshot(std::string bytes, bool keep_previous = false);
  // The snapshot stays the last commit; the previous generation is dropped (a sync that kept the
  // value as it is).
  void keep_snapshot() { has_previous_ = false; }
  // Parses the previous generation; the returned function makes it the snapshot and the object
  // (it does nothing without one). Throws InvalidArgument, changing nothing, if it does not parse.
  std::function<void()> stage_step_back();
  bool has_previous() const { return has_previous_; }

 private:
  std::string name_;
  ObjectAccess access_;
  std::string snapshot_;
  std::string previous_;
  bool has_snapshot_ = false;
  bool has_previous_ = false;
};

}  // namespace cohort::elastic::detail
