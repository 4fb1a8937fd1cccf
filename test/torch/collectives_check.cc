// Runs alone or under cohortrun: every collective of cohort::torch on at::Tensor, across dtypes
// (float16, bfloat16 and bool included), against the result torch computes in this process from
// every rank's input (each rank can make every rank's input); in place, async, non-contiguous and
// requires-grad tensors; and the errors (unsupported dtypes, shapes that differ across ranks, after
// which the runtime keeps working). CUDA tensors: with the adapter's CUDA path (COHORT_TORCH_CUDA)
// and a GPU for every local rank, the same collectives on the GPU; without the path, the refusal.
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/torch.h>

#include <sstream>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/torch.h"

using namespace cohort::testing;
namespace ct = cohort::torch;
using cohort::ReduceOp;

namespace {

int g_rank = 0;
int g_size = 1;

const std::vector<at::ScalarType> kDtypes = {at::kFloat,    at::kDouble, at::kHalf,
                                             at::kBFloat16, at::kInt,    at::kLong,
                                             at::kByte,     at::kChar,   at::kBool};

bool is_float(at::ScalarType t) {
  return at::isFloatingType(t);
}

// Rank r's input: small integers (exact in every dtype), different on every rank.
at::Tensor input_of(int r, at::ScalarType dtype, at::IntArrayRef shape, bool for_product = false) {
  at::Tensor base = at::arange(c10::multiply_integers(shape), at::kDouble).reshape(shape);
  at::Tensor v = for_product ? (base + r).remainder(2) + 1 : (base + 2 * r).remainder(5);
  if (dtype == at::kBool) v = (base + r).remainder(3).ne(0);
  return v.to(dtype);
}

// Every rank's input, stacked along a new first dimension, as float64.
at::Tensor all_inputs(at::ScalarType dtype, at::IntArrayRef shape, bool for_product = false) {
  std::vector<at::Tensor> each;
  for (int r = 0; r < g_size; ++r) each.push_back(input_of(r, dtype, shape, for_product));
  return at::stack(each).to(at::kDouble);
}

at::Tensor reference(ReduceOp op, at::ScalarType dtype, at::IntArrayRef shape, double pre = 1,
                     double post = 1) {
  at::Tensor all = all_inputs(dtype, shape, op == ReduceOp::kProduct);
  at::Tensor r;
  switch (op) {
    case ReduceOp::kSum:
      r = (all * pre).sum(0) * post;
      break;
    case ReduceOp::kAverage:
      r = (all * pre).sum(0) * post / g_size;
      break;
    case ReduceOp::kMin:
      r = std::get<0>(all.min(0));
      break;
    case ReduceOp::kMax:
      r = std::get<0>(all.max(0));
      break;
    case ReduceOp::kProduct:
      r = all.prod(0);
      break;
  }
  if (dtype == at::kBool) r = r.ne(0);  // sum and max are OR, min and product AND
  return r.to(dtype);
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  check(got.scalar_type() == want.scalar_type(),
        what + ": dtype " + c10::toString(got.scalar_type()));
  check(got.sizes() == want.sizes(), what + ": shape differs");
  at::ScalarType t = want.scalar_type();
  double tolerance = (t == at::kHalf || t == at::kBFloat16) ? 1e-2 : t == at::kFloat ? 1e-5 : 1e-9;
  if (!at::allclose(got.to(at::kDouble), want.to(at::kDouble), tolerance, tolerance)) {
    std::ostringstream s;
    s << what << ": got\n" << got << "\nwant\n" << want;
    fail(s.str());
  }
  ++g_checks;
}

std::string label(const char* op, at::ScalarType dtype) {
  return std::string(op) + " " + c10::toString(dtype);
}

void check_dtypes() {
  for (at::ScalarType t : kDtypes) {
    check(ct::to_torch(ct::to_cohort(t)) == t, label("round trip", t));
  }
  expect_error<cohort::InvalidArgument>([] { ct::to_cohort(at::kComplexFloat); },
                                        "dtype complex64 is not supported", "complex64 dtype");
  expect_error<cohort::InvalidArgument>([] { ct::allreduce(at::zeros({2}, at::kComplexFloat)); },
                                        "complex64", "complex allreduce");
  expect_error<cohort::InvalidArgument>([] { ct::allreduce_(at::zeros({2}, at::kShort)); },
                                        "dtype int16 is not supported", "int16 allreduce");
  expect_error<cohort::InvalidArgument>([] { ct::allgather(at::Tensor()); }, "undefined",
                                        "undefined tensor");
}

void check_allreduce() {
  const std::vector<int64_t> shape = {3, 4};
  for (at::ScalarType t : kDtypes) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      std::string what = label("allreduce", t) + " " + std::string(cohort::to_string(op));
      at::Tensor in = input_of(g_rank, t, shape, op == ReduceOp::kProduct);
      at::Tensor before = in.clone();
      at::Tensor out = ct::allreduce(in, {.op = op});
      expect_equal(out, reference(op, t, shape), what);
      check(at::equal(in, before), what + ": the input changed");
    }
    if (!is_float(t)) continue;
    expect_equal(ct::allreduce(input_of(g_rank, t, shape), {.op = ReduceOp::kAverage}),
                 reference(ReduceOp::kAverage, t, shape), label("average", t));
    expect_equal(ct::allreduce(input_of(g_rank, t, shape), {.prescale = 0.5, .postscale = 3}),
                 reference(ReduceOp::kSum, t, shape, 0.5, 3), label("scaled sum", t));
    expect_equal(ct::allreduce(input_of(g_rank, t, shape),
                               {.op = ReduceOp::kAverage, .prescale = 2, .postscale = 0.5}),
                 reference(ReduceOp::kAverage, t, shape, 2, 0.5), label("scaled average", t));
  }
}

void check_in_place_and_async() {
  at::Tensor t = input_of(g_rank, at::kFloat, {5});
  at::Tensor result = ct::allreduce_(t);
  check(result.is_same(t), "allreduce_ returns the caller's tensor");
  expect_equal(t, reference(ReduceOp::kSum, at::kFloat, {5}), "allreduce_ in place");

  // Several asynchronous calls in flight at once, named and unnamed, waited in reverse order.
  std::vector<ct::Work> works;
  std::vector<at::Tensor> tensors;
  for (at::ScalarType dtype : {at::kHalf, at::kBFloat16, at::kBool, at::kLong}) {
    tensors.push_back(input_of(g_rank, dtype, {2, 3}));
    works.push_back(ct::allreduce_async_(tensors.back(), {.op = ReduceOp::kMax}));
  }
  works.push_back(ct::allreduce_async(input_of(g_rank, at::kDouble, {7}), {}, "named.sum"));
  check(works.back().name() == "named.sum", "a given name is kept");
  check(works.front().name().rfind("allreduce.noname.", 0) == 0,
        "unnamed: '" + works.front().name() + "'");
  expect_equal(works.back().wait(), reference(ReduceOp::kSum, at::kDouble, {7}), "async sum");
  for (size_t i = tensors.size(); i-- > 0;) {
    at::ScalarType dtype = tensors[i].scalar_type();
    expect_equal(works[i].wait(), reference(ReduceOp::kMax, dtype, {2, 3}),
                 label("async max", dtype));
    check(works[i].poll(), "poll() after wait()");
    check(works[i].wait().is_same(tensors[i]), "wait() twice gives the same tensor");
  }
  expect_error<cohort::InvalidArgument>([&] { works[0].received_splits(); }, "alltoall",
                                        "received_splits of an allreduce");
  expect_error<cohort::InvalidArgument>([] { ct::Work().wait(); }, "no collective", "empty Work");
}

void check_grouped() {
  // The third member is a transpose: grouped calls stage it too.
  auto original = [](size_t i) {
    if (i == 0) return input_of(g_rank, at::kFloat, {4});
    if (i == 1) return input_of(g_rank, at::kHalf, {2, 2});
    return input_of(g_rank, at::kDouble, {3, 2}).t();
  };
  auto want = [](size_t i, ReduceOp op) {
    if (i == 0) return reference(op, at::kFloat, {4});
    if (i == 1) return reference(op, at::kHalf, {2, 2});
    return reference(op, at::kDouble, {3, 2}).t();
  };
  std::vector<at::Tensor> inputs = {original(0), original(1), original(2)};
  std::vector<at::Tensor> out = ct::grouped_allreduce(inputs, {.op = ReduceOp::kAverage});
  check(out.size() == 3, "grouped: three results");
  for (size_t i = 0; i < 3; ++i) {
    expect_equal(out[i], want(i, ReduceOp::kAverage), "grouped average " + std::to_string(i));
    expect_equal(inputs[i], original(i), "grouped leaves its inputs");
  }
  ct::Work work = ct::grouped_allreduce_async_(inputs, {.op = ReduceOp::kSum}, "grouped.inplace");
  expect_error<cohort::InvalidArgument>([&] { work.wait(); }, "wait_all", "grouped wait()");
  std::vector<at::Tensor> same = work.wait_all();
  for (size_t i = 0; i < 3; ++i) {
    check(same[i].data_ptr() == inputs[i].data_ptr(), "grouped in place returns the tensors");
    expect_equal(inputs[i], want(i, ReduceOp::kSum), "grouped in place " + std::to_string(i));
  }
}

void check_non_contiguous_and_grad() {
  // A transpose: the collective works on a contiguous copy and writes the result back.
  at::Tensor base = input_of(g_rank, at::kFloat, {3, 2});
  at::Tensor transposed = base.t();
  check(!transposed.is_contiguous(), "the transpose is not contiguous");
  at::Tensor want = reference(ReduceOp::kSum, at::kFloat, {3, 2}).t();
  expect_equal(ct::allreduce(transposed), want, "allreduce of a transpose");
  ct::allreduce_(transposed);
  expect_equal(transposed, want, "allreduce_ of a transpose, in place");
  expect_equal(base, want.t(), "allreduce_ of a transpose wrote through to its base");

  at::Tensor column = at::zeros({4, 3}, at::kDouble);
  at::Tensor strided = column.select(1, 1);
  if (g_rank == 0) strided.copy_(at::arange(4, at::kDouble));
  ct::broadcast_(strided, 0);
  expect_equal(column.select(1, 1), at::arange(4, at::kDouble), "broadcast_ of a column");
  check(column.select(1, 0).eq(0).all().item<bool>(), "broadcast_ kept the other columns");

  // A leaf that requires grad (a parameter) is refused in place, as torch's own in-place ops
  // refuse it, unless grad mode is off; the write bumps its version counter as they do.
  at::Tensor weight = ::torch::full({3}, g_rank + 1.0, ::torch::requires_grad());
  expect_error<cohort::InvalidArgument>(
      [&] { ct::allreduce_(weight); },
      "a leaf Variable that requires grad is being used in an in-place operation.",
      "allreduce_ of a parameter with grad mode on");
  auto version = weight._version();
  {
    at::NoGradGuard no_grad;
    ct::allreduce_(weight, {.op = ReduceOp::kAverage});
  }
  check(weight._version() > version, "allreduce_ bumped the parameter's version counter");
  check(weight.requires_grad(), "the parameter still requires grad");
  expect_equal(weight.detach(), at::full({3}, (g_size + 1) / 2.0), "allreduce_ of a parameter");
}

void check_allgather_and_broadcast() {
  for (at::ScalarType t :
       {at::kFloat, at::kHalf, at::kBFloat16, at::kBool, at::kLong, at::kShort}) {
    // Rank r gives r + 1 rows.
    std::vector<at::Tensor> rows;
    for (int r = 0; r < g_size; ++r) rows.push_back(input_of(r, t, {r + 1, 3}));
    expect_equal(ct::allgather(rows[g_rank]), at::cat(rows), label("allgather", t));

    int root = g_size - 1;
    at::Tensor mine = input_of(g_rank, t, {2, 2});
    at::Tensor copy = ct::broadcast(mine, root);
    expect_equal(copy, input_of(root, t, {2, 2}), label("broadcast", t));
    expect_equal(mine, input_of(g_rank, t, {2, 2}), label("broadcast leaves its input", t));
    ct::broadcast_(mine, root);
    expect_equal(mine, input_of(root, t, {2, 2}), label("broadcast_", t));
  }
}

// Row k that rank `from` sends to rank `to`: its values say where it came from.
at::Tensor rows_for(int from, int to, int64_t count) {
  return at::stack({at::full({count}, static_cast<double>(from)),
                    at::full({count}, static_cast<double>(to)), at::arange(count, at::kDouble)},
                   1);
}
// Uneven, with zeros at 3 ranks, and never nothing at all.
int64_t split_count(int from, int to) {
  return (from + to) % 3 + (from == to ? 1 : 0);
}

void check_alltoall() {
  std::vector<at::Tensor> parts;
  std::vector<int64_t> splits;
  for (int to = 0; to < g_size; ++to) {
    splits.push_back(split_count(g_rank, to));
    parts.push_back(rows_for(g_rank, to, splits.back()));
  }
  auto [received, counts] = ct::alltoall(at::cat(parts), at::tensor(splits, at::kLong));
  std::vector<at::Tensor> want;
  std::vector<int64_t> want_counts;
  for (int from = 0; from < g_size; ++from) {
    want_counts.push_back(split_count(from, g_rank));
    want.push_back(rows_for(from, g_rank, want_counts.back()));
  }
  expect_equal(received, at::cat(want), "alltoall with uneven splits");
  expect_equal(counts, at::tensor(want_counts, at::kLong), "alltoall received splits");

  // Even split (no splits given), int32 splits for bfloat16 rows.
  at::Tensor even = input_of(g_rank, at::kBFloat16, {2 * g_size, 2});
  ct::Work work = ct::alltoall_async(even, at::full({g_size}, 2, at::kInt));
  std::vector<at::Tensor> from_each;
  for (int from = 0; from < g_size; ++from) {
    from_each.push_back(input_of(from, at::kBFloat16, {2 * g_size, 2}).narrow(0, 2 * g_rank, 2));
  }
  expect_equal(work.wait(), at::cat(from_each), "alltoall even split");
  expect_equal(work.received_splits(), at::full({g_size}, 2, at::kLong), "even received splits");
  auto [plain, plain_counts] = ct::alltoall(even);
  expect_equal(plain, at::cat(from_each), "alltoall without splits");
}

void check_reducescatter() {
  int64_t rows = 2 * g_size + 1;
  for (at::ScalarType t : {at::kFloat, at::kHalf, at::kInt}) {
    at::Tensor full = reference(ReduceOp::kSum, t, {rows, 2});
    int64_t start = 0;
    for (int r = 0; r < g_rank; ++r) start += rows / g_size + (r < rows % g_size ? 1 : 0);
    int64_t mine = rows / g_size + (g_rank < rows % g_size ? 1 : 0);
    expect_equal(ct::reducescatter(input_of(g_rank, t, {rows, 2})), full.narrow(0, start, mine),
                 label("reducescatter", t));
  }
  at::Tensor avg = reference(ReduceOp::kAverage, at::kDouble, {g_size, 3});
  expect_equal(
      ct::reducescatter(input_of(g_rank, at::kDouble, {g_size, 3}), {.op = ReduceOp::kAverage}),
      avg.narrow(0, g_rank, 1), "reducescatter average");
}

void check_mismatch_then_recover() {
  if (g_size > 1) {
    // Shapes differ across ranks: every rank gets MismatchError from wait().
    ct::Work work = ct::allreduce_async(at::ones({g_rank + 1}), {}, "mismatch.shape");
    expect_error<cohort::MismatchError>([&] { work.wait(); }, "", "mismatched shapes");
  }
  expect_equal(ct::allreduce(at::ones({2}), {}, "after.mismatch"), at::full({2}, 1.0 * g_size),
               "allreduce after a mismatch");
}

void check_barrier_and_join() {
  ct::barrier();
  // Every rank but the last joins at once; the last reduces alone (the others add zeros).
  int last = g_size - 1;
  if (g_rank == last) {
    expect_equal(ct::allreduce(at::full({3}, 2.0), {}, "joined.sum"), at::full({3}, 2.0),
                 "allreduce while the others joined");
  }
  check(ct::join() == last, "join returns the last rank to join");
  ct::barrier();
}

#if COHORT_TORCH_CUDA

// The collectives on this rank's GPU (NCCL needs one device per rank), results compared on the CPU.
void check_cuda_tensors() {
  if (at::detail::getCUDAHooks().getNumGPUs() < cohort::local_size()) {
    std::cout << "torch_collectives_check: fewer GPUs than local ranks; CUDA tensors not checked"
              << std::endl;
    return;
  }
  at::Device gpu(at::kCUDA, static_cast<c10::DeviceIndex>(cohort::local_rank()));
  at::Tensor in = input_of(g_rank, at::kFloat, {3, 2}).to(gpu);
  at::Tensor sum = ct::allreduce(in, {}, "cuda.allreduce");
  check(sum.device() == gpu, "a CUDA allreduce's result is on the tensor's GPU");
  expect_equal(sum.cpu(), reference(ReduceOp::kSum, at::kFloat, {3, 2}), "CUDA allreduce");
  at::Tensor transposed = in.t();  // staged, reduced, written back on torch's stream
  ct::allreduce_(transposed, {.op = ReduceOp::kAverage}, "cuda.allreduce_.t");
  expect_equal(in.cpu(), reference(ReduceOp::kAverage, at::kFloat, {3, 2}),
               "CUDA allreduce_ of a transpose");

  at::Tensor rows = at::full({g_rank + 1, 2}, g_rank, at::TensorOptions(at::kLong).device(gpu));
  at::Tensor gathered = ct::allgather(rows, "cuda.allgather");
  check(gathered.device() == gpu, "a CUDA allgather's result is on the GPU");
  check(gathered.size(0) == g_size * (g_size + 1) / 2, "CUDA allgather: every rank's rows");

  at::Tensor block = ct::reducescatter(at::ones({2 * g_size, 3}, gpu), {}, "cuda.reducescatter");
  expect_equal(block.cpu(), at::full({2, 3}, 1.0f * g_size), "CUDA reducescatter");

  at::Tensor b = at::full({4}, g_rank + 5.0, gpu);
  ct::broadcast_(b, 0, "cuda.broadcast_");
  expect_equal(b.cpu(), at::full({4}, 5.0f), "CUDA broadcast_");

  expect_error<cohort::InvalidArgument>(
      [&] {
        ct::grouped_allreduce({at::ones({2}), at::ones({2}, gpu)}, {}, "cuda.mixed");
      },
      "one device", "a grouped call mixing CPU and CUDA tensors");
}

#else

// A tensor torch takes for a CUDA tensor, over host memory that nothing reads: libtorch without
// CUDA cannot make a real one, and this is enough to check that the adapter refuses it.
at::Tensor fake_cuda_tensor(float* data) {
  at::Device device(at::kCUDA, 0);
  return at::for_blob(data, {2})
      .options(at::TensorOptions().dtype(at::kFloat).device(device))
      .target_device(device)
      .make_tensor();
}

void check_cuda_tensors() {
  float data[2] = {1, 2};
  at::Tensor fake = fake_cuda_tensor(data);
  check(fake.is_cuda(), "the fake tensor is a CUDA tensor");
  const std::string refused = "CUDA tensor on a CPU-only build";
  expect_error<cohort::InvalidArgument>([&] { ct::allreduce(fake); }, refused, "CUDA allreduce");
  expect_error<cohort::InvalidArgument>([&] { ct::allreduce_(fake); }, refused, "CUDA allreduce_");
  expect_error<cohort::InvalidArgument>([&] { ct::allgather(fake); }, refused, "CUDA allgather");
  expect_error<cohort::InvalidArgument>([&] { ct::broadcast_(fake, 0); }, refused,
                                        "CUDA broadcast_");
  expect_error<cohort::InvalidArgument>([&] { ct::alltoall(fake); }, refused, "CUDA alltoall");
  expect_error<cohort::InvalidArgument>([&] { ct::reducescatter(fake); }, refused,
                                        "CUDA reducescatter");
  // In a group with a CPU tensor the member's own refusal comes first: it says more.
  expect_error<cohort::InvalidArgument>(
      [&] {
        ct::grouped_allreduce_({at::ones({2}), fake});
      },
      refused, "CUDA member of a group");
}

#endif

}  // namespace

int main() {
  g_program = "torch_collectives_check";
  cohort::init();
  g_rank = cohort::rank();
  g_size = cohort::size();
  check_dtypes();
  check_allreduce();
  check_in_place_and_async();
  check_grouped();
  check_non_contiguous_and_grad();
  check_allgather_and_broadcast();
  check_alltoall();
  check_reducescatter();
  check_mismatch_then_recover();
  check_cuda_tensors();
  check_barrier_and_join();
  std::cout << "torch_collectives_check: rank " << g_rank << " of " << g_size << ": " << g_checks
            << " checks passed" << std::endl;
  cohort::shutdown();
  return 0;
}
