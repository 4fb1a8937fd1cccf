// Every collective on CUDA device tensors through the engine's public API, every DataType,
// compared element by element with the same collective run on host tensors in the same program:
// allreduce (sum, average, min, max, product; prescale and postscale), grouped allreduce,
// broadcast, allgather, alltoall (uneven splits), reducescatter (uneven blocks), the same on a
// process set of a subset (a one-rank set in a world of one), and, after shutdown() and init(),
// a rebuilt device backend. With one rank it exercises NCCL (a world of one); with 2 or 4 ranks
// sharing one GPU, the staged backend (COHORT_DEVICE_OPERATIONS=staged, or auto picking it).
//
//   device_matrix_check --probe      exit 77 with a one-line reason when no GPU is usable
//   device_matrix_check              the checks (under cohortrun)
//   device_matrix_check --refusal    COHORT_DEVICE_OPERATIONS=nccl with ranks sharing a GPU:
//                                    every rank gets a clear error, and the runtime goes on
//   device_matrix_check --rehearse   the checks with host memory standing in for the device
//                                    (any machine): the program's own logic, not the GPU's
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "device_compare.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

std::string label(const char* what, DataType d) {
  return std::string(what) + " " + std::string(to_string(d));
}

// The scale factors to try: none, and (floating sums and averages) prescale 0.5 × postscale 4,
// which keeps small integers exact in every floating type.
std::vector<std::pair<double, double>> scales_for(DataType d, ReduceOp op) {
  std::vector<std::pair<double, double>> scales = {{1.0, 1.0}};
  bool scalable = op == ReduceOp::kSum || op == ReduceOp::kAverage;
  if (is_floating(d) && scalable) scales.push_back({0.5, 4.0});
  return scales;
}

// Averages need a floating type, on the host as on the device.
bool applies(DataType d, ReduceOp op) {
  return op != ReduceOp::kAverage || is_floating(d);
}

void allreduce_one(DataType d, AllreduceOptions options, const std::string& what) {
  std::vector<std::byte> host = inputs(d, options.op, rank(), 1027);
  DeviceMemory device(host);
  Shape shape = {1027};
  allreduce("h " + what, Tensor{host.data(), d, shape}, options);
  allreduce("d " + what, device.tensor(d, shape), options);
  same(host, device.read(), d, what);
}

void check_allreduce(ProcessSet set) {
  for (DataType d : ops::testing::kAllTypes) {
    for (ReduceOp op : kOps) {
      if (!applies(d, op)) continue;
      for (auto [pre, post] : scales_for(d, op)) {
        std::string what = label("allreduce", d) + " " + std::string(to_string(op)) + " x" +
                           std::to_string(pre) + " x" + std::to_string(post) + " set " +
                           std::to_string(set.id);
        allreduce_one(d, {op, pre, post, set}, what);
      }
    }
  }
}

// Three members of different sizes, one of them a single element.
void check_grouped(DataType d, ReduceOp op, double pre, double post) {
  std::vector<std::vector<std::byte>> host;
  std::vector<std::unique_ptr<DeviceMemory>> device;
  std::vector<Tensor> host_tensors, device_tensors;
  for (int64_t count : {5, 64, 1}) {
    host.push_back(inputs(d, op, rank(), static_cast<size_t>(count), static_cast<int>(count)));
    device.push_back(std::make_unique<DeviceMemory>(host.back()));
    host_tensors.push_back({host.back().data(), d, {count}});
    device_tensors.push_back(device.back()->tensor(d, {count}));
  }
  std::string what = label("grouped allreduce", d) + " " + std::string(to_string(op));
  grouped_allreduce("h " + what, host_tensors, {op, pre, post});
  grouped_allreduce("d " + what, device_tensors, {op, pre, post});
  for (size_t i = 0; i < host.size(); ++i) {
    same(host[i], device[i]->read(), d, what + " member " + std::to_string(i));
  }
}

void check_broadcast(DataType d, ProcessSet set, int root) {
  std::vector<std::byte> host = inputs(d, ReduceOp::kSum, rank(), 100, 1);
  DeviceMemory device(host);
  std::string what = label("broadcast", d) + " from " + std::to_string(root);
  broadcast("h " + what, Tensor{host.data(), d, {100}}, root, set);
  broadcast("d " + what, device.tensor(d, {100}), root, set);
  same(host, device.read(), d, what);
}

// Rank r contributes r + 1 rows of 3.
void check_allgather(DataType d, ProcessSet set) {
  int64_t rows = rank() + 1;
  std::vector<std::byte> host = inputs(d, ReduceOp::kSum, rank(), static_cast<size_t>(rows * 3));
  DeviceMemory device(host);
  std::string what = label("allgather", d) + " set " + std::to_string(set.id);
  OwnedTensor h = allgather("h " + what, Tensor{host.data(), d, {rows, 3}}, set);
  OwnedTensor g = allgather("d " + what, device.tensor(d, {rows, 3}), set);
  same(h, g, what);
}

// Rank r sends p + 1 + (r % 2) rows of 2 to rank p.
void check_alltoall(DataType d) {
  std::vector<int64_t> splits;
  int64_t rows = 0;
  for (int p = 0; p < size(); ++p) rows += splits.emplace_back(p + 1 + rank() % 2);
  std::vector<std::byte> host = inputs(d, ReduceOp::kSum, rank(), static_cast<size_t>(rows * 2));
  DeviceMemory device(host);
  std::string what = label("alltoall", d);
  AlltoallResult h = alltoall("h " + what, Tensor{host.data(), d, {rows, 2}}, splits);
  AlltoallResult g = alltoall("d " + what, device.tensor(d, {rows, 2}), splits);
  check(h.received_splits == g.received_splits, what + ": received splits differ");
  same(h.output, g.output, what);
}

// 2n + 1 rows of 3 over n ranks: the first rank's block has an extra row.
void check_reducescatter(DataType d) {
  int64_t rows = 2 * size() + 1;
  for (ReduceOp op : kOps) {
    if (!applies(d, op)) continue;
    for (auto [pre, post] : scales_for(d, op)) {
      std::vector<std::byte> host = inputs(d, op, rank(), static_cast<size_t>(rows * 3), 2);
      DeviceMemory device(host);
      std::string what = label("reducescatter", d) + " " + std::string(to_string(op)) + " x" +
                         std::to_string(pre * post);
      OwnedTensor h =
          reducescatter("h " + what, Tensor{host.data(), d, {rows, 3}}, {op, pre, post});
      OwnedTensor g = reducescatter("d " + what, device.tensor(d, {rows, 3}), {op, pre, post});
      same(h, g, what);
    }
  }
}

void check_every_collective() {
  check_allreduce({});
  for (DataType d :
       {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    check_grouped(d, ReduceOp::kSum, 0.5, 4.0);
    check_grouped(d, ReduceOp::kAverage, 1.0, 1.0);
  }
  check_grouped(DataType::kInt32, ReduceOp::kMin, 1.0, 1.0);
  check_grouped(DataType::kBool, ReduceOp::kMax, 1.0, 1.0);
  for (DataType d : ops::testing::kAllTypes) {
    check_broadcast(d, {}, size() - 1);
    check_allgather(d, {});
    check_alltoall(d);
    check_reducescatter(d);
  }
}

// The ranks 1 .. n - 1 (just rank 0 in a world of one) as a process set: allreduce, allgather and
// broadcast among them; the others go on.
void check_process_set() {
  std::vector<int> members;
  for (int r = size() > 1 ? 1 : 0; r < size(); ++r) members.push_back(r);
  ProcessSet set = add_process_set(members);
  if (rank() >= members.front()) {
    allreduce_one(DataType::kFloat32, {ReduceOp::kSum, 1.0, 1.0, set}, "allreduce on a subset");
    allreduce_one(DataType::kFloat16, {ReduceOp::kAverage, 1.0, 1.0, set}, "average on a subset");
    check_allgather(DataType::kInt64, set);
    check_broadcast(DataType::kBFloat16, set, members.back());
  }
  allreduce_one(DataType::kFloat32, {ReduceOp::kMax}, "allreduce of the world beside a set");
  remove_process_set(set);
}

const char* device_operations() {
  const char* mode = std::getenv("COHORT_DEVICE_OPERATIONS");
  return mode != nullptr ? mode : "auto (unset)";
}

// Every collective, then the same runtime torn down and joined afresh: a new device backend
// (a new NCCL communicator, or new staging buffers) serves the next device collective.
int run_checks() {
  check_every_collective();
  check_process_set();
  shutdown();
  init();
  allreduce_one(DataType::kFloat32, {ReduceOp::kSum, 0.5, 4.0}, "allreduce after a rebuild");
  allreduce_one(DataType::kBFloat16, {ReduceOp::kMin}, "min after a rebuild");
  std::cout << "device_matrix_check: rank " << rank() << " of " << size() << ": " << g_checks
            << " checks passed on device " << g_device
            << ", COHORT_DEVICE_OPERATIONS=" << device_operations() << std::endl;
  shutdown();
  return 0;
}

// COHORT_DEVICE_OPERATIONS=nccl with ranks sharing a GPU: NCCL refuses them. Each device
// collective must fail on every rank with an error that names NCCL, within the runtime's
// timeout, and the runtime must go on (host collectives, a second device attempt).
int run_refusal() {
  std::vector<std::byte> host = inputs(DataType::kFloat32, ReduceOp::kSum, rank(), 16);
  DeviceMemory device(host);
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string name = "refused " + std::to_string(attempt);
    expect_error<Error>([&] { allreduce(name, device.tensor(DataType::kFloat32, {16})); }, "NCCL",
                        "device allreduce with COHORT_DEVICE_OPERATIONS=nccl on a shared GPU");
    std::vector<float> ones(4, 1.0f);
    allreduce("host after refusal " + std::to_string(attempt), Tensor::of(ones));
    check(ones[3] == static_cast<float>(size()), "a host allreduce after the refusal");
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "device_matrix_check --refusal: rank " << rank() << " of " << size()
            << ": refused twice with a clear error, then went on (" << seconds << " s)"
            << std::endl;
  shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_program = "device_matrix_check";
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--probe") probe_and_exit(g_program);
  if (mode == "--rehearse") {
    g_rehearsal = true;
    g_device = kCpuDevice;
    init();
    return run_checks();
  }
  std::string why;
  int devices = usable_devices(why);
  if (devices == 0) {
    std::cout << g_program << ": skipped: " << why << std::endl;
    return 77;
  }
  init();
  g_device = local_rank() % devices;  // ranks share the GPUs there are
  return mode == "--refusal" ? run_refusal() : run_checks();
}
