// Device tensors through the engine, under cohortrun (CUDA builds only). Each rank's tensors are
// on the CUDA device of its local rank (modulo the devices there are: ranks may share one).
// With a CUDA device: every collective of device memory (allreduce with average and
// scale factors, grouped allreduce, broadcast, allgather, alltoall, reducescatter) is checked
// against the exact host result, and the runtime-owned results are on the device. Without one
// (this project's CI): every rank gets a clear error for each device collective and the runtime
// goes on. Either way, the device-tensor argument checks and the host/device mismatch hold.
#include <cuda_runtime.h>

#include <numeric>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

int visible_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

void check_argument_errors(Tensor device_tensor, Tensor device_ints) {
  expect_error<InvalidArgument>(
      [&] { allreduce("device ints avg", device_ints, {ReduceOp::kAverage}); },
      "need a floating-point type, not int32", "device integer average");
  expect_error<InvalidArgument>(
      [&] {
        allreduce("device max scaled", device_tensor, {ReduceOp::kMax, 2.0});
      },
      "apply to sum and average only", "device max with a scale factor");
  std::vector<float> host(static_cast<size_t>(device_tensor.num_elements()));
  expect_error<InvalidArgument>(
      [&] { allreduce("device to host", device_tensor, Tensor::of(host)); }, "reduced in place",
      "device allreduce into host memory");
  expect_error<InvalidArgument>(
      [&] {
        reducescatter("device rs min scaled", device_tensor, {ReduceOp::kMin, 1.0, 3.0});
      },
      "reducescatter 'device rs min scaled': scale factors", "device reducescatter min scaled");
}

// Rank 0 submits host memory, the others device memory: a mismatch on every rank, before any
// device is touched.
void check_memory_mismatch(Tensor device_tensor) {
  std::vector<float> host(static_cast<size_t>(device_tensor.num_elements()));
  Tensor mine = cohort::rank() == 0 ? Tensor::of(host) : device_tensor;
  expect_error<MismatchError>([&] { allreduce("host or device", mine); },
                              "mismatched memory: rank 0 host, rank 1 CUDA device",
                              "host/device mismatch");
}

// Device memory holding `values`, freed at scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, const std::vector<float>& values) : bytes_(values.size() * 4) {
    check(cudaSetDevice(device) == cudaSuccess && cudaMalloc(&data_, bytes_) == cudaSuccess,
          "cudaMalloc");
    check(cudaMemcpy(data_, values.data(), bytes_, cudaMemcpyHostToDevice) == cudaSuccess,
          "cudaMemcpy to the device");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  Tensor tensor(int device, Shape shape) const {
    return {data_, DataType::kFloat32, std::move(shape), device};
  }
  std::vector<float> read() const { return read(data_, bytes_ / 4); }

  static std::vector<float> read(const void* device_data, size_t count) {
    std::vector<float> host(count);
    check(cudaMemcpy(host.data(), device_data, count * 4, cudaMemcpyDeviceToHost) == cudaSuccess,
          "cudaMemcpy to the host");
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

std::vector<float> filled(size_t count, float value) {
  return std::vector<float>(count, value);
}

void check_reductions(int device) {
  int me = cohort::rank(), n = cohort::size();
  float sum = static_cast<float>(n * (n + 1) / 2);  // of the ranks' values me + 1
  DeviceBuffer a(device, filled(1024, static_cast<float>(me + 1)));
  allreduce("device sum", a.tensor(device, {1024}));
  check(a.read()[0] == sum && a.read()[1023] == sum, "device allreduce sum");
  DeviceBuffer b(device, filled(256, static_cast<float>(me + 1)));
  allreduce("device average", b.tensor(device, {256}), {ReduceOp::kAverage});
  check(b.read()[7] == sum / static_cast<float>(n), "device allreduce average");
  DeviceBuffer c(device, filled(256, static_cast<float>(me + 1)));
  allreduce("device scaled", c.tensor(device, {256}), {ReduceOp::kSum, 0.5, 4.0});
  check(c.read()[255] == sum * 2.0f, "device allreduce with prescale and postscale");
  DeviceBuffer d(device, filled(64, static_cast<float>(me + 1)));
  DeviceBuffer e(device, filled(3, static_cast<float>(2 * me)));
  grouped_allreduce("device group", {d.tensor(device, {8, 8}), e.tensor(device, {3})},
                    {ReduceOp::kMax});
  check(d.read()[63] == static_cast<float>(n) && e.read()[2] == static_cast<float>(2 * (n - 1)),
        "device grouped allreduce max");
  DeviceBuffer f(device, filled(16, static_cast<float>(me)));
  broadcast("device broadcast", f.tensor(device, {16}), n - 1);
  check(f.read()[15] == static_cast<float>(n - 1), "device broadcast");
}

// Rank r contributes r + 1 rows of two values (r, row); the result stays on the device.
void check_allgather(int device) {
  int me = cohort::rank(), n = cohort::size();
  std::vector<float> rows;
  for (int i = 0; i <= me; ++i)
    rows.insert(rows.end(), {static_cast<float>(me), static_cast<float>(i)});
  DeviceBuffer in(device, rows);
  OwnedTensor all = allgather("device gather", in.tensor(device, {me + 1, 2}));
  check(all.device == device && all.bytes.empty(), "device allgather result on the device");
  check(all.shape == Shape{n * (n + 1) / 2, 2}, "device allgather shape");
  expect_error<InvalidArgument>([&] { (void)all.as<float>(); }, "copy it to host memory",
                                "reading a device result as host memory");
  std::vector<float> got = DeviceBuffer::read(all.data(), all.num_bytes() / 4);
  size_t at = 0;
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i <= r; ++i, at += 2) {
      check(got[at] == static_cast<float>(r) && got[at + 1] == static_cast<float>(i),
            "device allgather row " + std::to_string(at / 2));
    }
  }
}

// Rank r sends p + 1 rows of value 10 r + p to rank p.
void check_alltoall(int device) {
  int me = cohort::rank(), n = cohort::size();
  std::vector<float> rows;
  std::vector<int64_t> splits;
  for (int p = 0; p < n; ++p) {
    splits.push_back(p + 1);
    rows.insert(rows.end(), static_cast<size_t>(p + 1), static_cast<float>(10 * me + p));
  }
  DeviceBuffer in(device, rows);
  AlltoallResult result =
      alltoall("device alltoall", in.tensor(device, {static_cast<int64_t>(rows.size())}), splits);
  check(result.output.device == device && result.output.shape == Shape{n * (me + 1)},
        "device alltoall result on the device");
  std::vector<float> got = DeviceBuffer::read(result.output.data(), result.output.num_bytes() / 4);
  for (int r = 0; r < n; ++r) {
    check(result.received_splits[static_cast<size_t>(r)] == me + 1, "device alltoall splits");
    check(got[static_cast<size_t>(r * (me + 1))] == static_cast<float>(10 * r + me),
          "device alltoall block from rank " + std::to_string(r));
  }
}

// 2n + 1 rows over n ranks, split as evenly as possible: the first rank gets the extra row.
void check_reducescatter(int device) {
  int64_t me = cohort::rank(), n = cohort::size();
  int64_t rows = 2 * n + 1;
  std::vector<float> values(static_cast<size_t>(rows));
  std::iota(values.begin(), values.end(), static_cast<float>(me));
  DeviceBuffer in(device, values);
  OwnedTensor block =
      reducescatter("device reducescatter", in.tensor(device, {rows}), {ReduceOp::kAverage});
  auto block_rows = [&](int64_t r) { return rows / n + (r < rows % n ? 1 : 0); };
  check(block.device == device && block.shape == Shape{block_rows(me)},
        "device reducescatter shape");
  int64_t first = 0;
  for (int64_t r = 0; r < me; ++r) first += block_rows(r);
  std::vector<float> got = DeviceBuffer::read(block.data(), block.num_bytes() / 4);
  // The average over ranks of (row + r) is row + (n - 1) / 2.
  float offset = static_cast<float>(n - 1) / 2.0f;
  for (size_t i = 0; i < got.size(); ++i) {
    check(got[i] == static_cast<float>(first) + static_cast<float>(i) + offset,
          "device reducescatter average, row " + std::to_string(first + static_cast<int64_t>(i)));
  }
}

void check_on_gpu(int device) {
  check_reductions(device);
  check_allgather(device);
  check_alltoall(device);
  check_reducescatter(device);
}

void check_without_gpu(Tensor t) {
  const char* no_nccl = "no device backend for device tensors";
  expect_error<Error>([&] { allreduce("device sum", t); }, no_nccl, "device allreduce");
  expect_error<Error>([&] { allreduce("device avg", t, {ReduceOp::kAverage}); }, no_nccl,
                      "device average");
  expect_error<Error>([&] { allgather("device gather", t); }, no_nccl, "device allgather");
  expect_error<Error>([&] { reducescatter("device reducescatter", t); }, no_nccl,
                      "device reducescatter");
  expect_error<Error>([&] { alltoall("device alltoall", t, {}); }, no_nccl, "device alltoall");
  std::vector<float> host(4, 1.0f);
  allreduce("host after device failure", Tensor::of(host));
  check(host[0] == static_cast<float>(cohort::size()), "the runtime goes on");
}

}  // namespace

int main() {
  g_program = "device_check";
  cohort::init();
  // Ranks share the GPUs there are: with fewer GPUs than ranks the engine stages their device
  // tensors through the host (COHORT_DEVICE_OPERATIONS=auto) instead of NCCL.
  int devices = visible_devices();
  int device = devices > 0 ? cohort::local_rank() % devices : cohort::local_rank();
  bool gpus = devices > 0;
  // Every rank must take the same path.
  std::vector<int32_t> have{gpus ? 1 : 0};
  allreduce("have gpus", Tensor::of(have), {ReduceOp::kMin});
  // Without a GPU these only hold the device number: nothing dereferences them.
  std::vector<float> never_touched(16);
  std::vector<int32_t> never_touched_ints(16);
  Tensor t{never_touched.data(), DataType::kFloat32, {16}, device};
  Tensor ints{never_touched_ints.data(), DataType::kInt32, {16}, device};
  check_argument_errors(t, ints);
  if (cohort::size() > 1) check_memory_mismatch(t);
  if (have[0] == 1) {
    check_on_gpu(device);
  } else {
    check_without_gpu(t);
  }
  cohort::shutdown();
  std::cout << "device_check: " << g_checks << " checks passed ("
            << (have[0] == 1 ? "on GPUs" : "no GPU: error paths") << ")" << std::endl;
  return 0;
}
