#include "dlpack.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "cohort/errors.h"
#include "cohort/types.h"

namespace cohort::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";

// What the capsule owns: the Handle holding the result's memory, and the shape and strides the
// DLPack tensor points at.
struct Owner {
  Handle handle;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  dlpack::ManagedTensor managed{};
};

dlpack::DataType dlpack_type(cohort::DataType dtype) {
  uint8_t bits = static_cast<uint8_t>(8 * element_size(dtype));
  switch (dtype) {
    case cohort::DataType::kUInt8:
    case cohort::DataType::kBool:
      return {dlpack::kUInt, bits, 1};
    case cohort::DataType::kInt8:
    case cohort::DataType::kInt32:
    case cohort::DataType::kInt64:
      return {dlpack::kInt, bits, 1};
    case cohort::DataType::kFloat16:
    case cohort::DataType::kFloat32:
    case cohort::DataType::kFloat64:
      return {dlpack::kFloat, bits, 1};
    case cohort::DataType::kBFloat16:
      return {dlpack::kBfloat, bits, 1};
  }
  throw InvalidArgument("cohort: a result of unknown dtype " +
                        std::to_string(static_cast<int>(dtype)));
}

void delete_owner(dlpack::ManagedTensor* self) {
  delete static_cast<Owner*>(self->manager_ctx);
}

// A capsule torch never consumed still owns its tensor (a consumer renames it "used_dltensor").
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsuleName) == 0) return;  // consumed (renamed) or invalid
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr) managed->deleter(managed);
}

}  // namespace

pybind11::capsule output_capsule(const Handle& handle) {
  const OwnedTensor& owned = handle.output();
  auto owner = std::make_unique<Owner>();
  owner->handle = handle;
  owner->shape = owned.shape;
  owner->strides.assign(owned.shape.size(), 1);
  for (size_t i = owned.shape.size(); i-- > 1;) {
    owner->strides[i - 1] = owner->strides[i] * std::max<int64_t>(owned.shape[i], 1);
  }
  static std::byte empty{};  // an empty host result still points at valid memory
  dlpack::Tensor& t = owner->managed.dl_tensor;
  t.data = const_cast<void*>(owned.data());
  if (t.data == nullptr && owned.device == kCpuDevice) t.data = &empty;
  t.device = owned.device == kCpuDevice ? dlpack::Device{dlpack::kCpu, 0}
                                        : dlpack::Device{dlpack::kCuda, owned.device};
  t.ndim = static_cast<int32_t>(owned.shape.size());
  t.dtype = dlpack_type(owned.dtype);
  t.shape = owner->shape.data();
  t.strides = owner->strides.data();
  t.byte_offset = 0;
  owner->managed.manager_ctx = owner.get();
  owner->managed.deleter = &delete_owner;
  PyObject* capsule = PyCapsule_New(&owner->managed, kCapsuleName, &capsule_destructor);
  if (capsule == nullptr) throw pybind11::error_already_set();
  owner.release();  // the capsule (or torch, once it consumes it) owns it now
  return pybind11::reinterpret_steal<pybind11::capsule>(capsule);
}

}  // namespace cohort::python
