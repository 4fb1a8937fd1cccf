// A runtime-owned result (cohort::OwnedTensor, in a completed Handle) handed to torch without a
// copy, as a DLPack capsule that torch.utils.dlpack.from_dlpack takes: torch 1.10 and every torch
// since read it, so the extension needs no libtorch. The capsule keeps the Handle, which owns the
// result's memory, until torch frees the tensor (or until the capsule is dropped unused).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

#include "cohort/handle.h"

namespace cohort::python {

// The DLPack ABI (dlpack.h, version 0.x "dltensor" capsules), declared here from its
// specification: the layouts below are what every DLPack producer and consumer agrees on.
namespace dlpack {
struct Device {
  int32_t device_type;  // kCpu or kCuda
  int32_t device_id;
};
struct DataType {
  uint8_t code;  // kInt, kUInt, kFloat or kBfloat
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};
inline constexpr int32_t kCpu = 1;
inline constexpr int32_t kCuda = 2;
inline constexpr uint8_t kInt = 0;
inline constexpr uint8_t kUInt = 1;
inline constexpr uint8_t kFloat = 2;
inline constexpr uint8_t kBfloat = 4;
}  // namespace dlpack

// The completed `handle`'s output as a "dltensor" capsule. Bool results are described as uint8
// (torch 1.13 reads no DLPack bool); the caller views them as bool. The GIL must be held.
pybind11::capsule output_capsule(const Handle& handle);

}  // namespace cohort::python
