// Runs under cohortrun with 3 ranks: a DataType or ReduceOp outside its enum (a cast from an
// unchecked integer) on one rank fails that call alone with InvalidArgument, before anything is
// sent; rank 0's decoder, which would take it for a corrupt message and end the job, never sees
// it. The other ranks see the usual behaviour of a name one rank did not submit (here the bad
// rank retries: correctly, or with another shape, a mismatch), and the job goes on.
#include <string>
#include <vector>

#include "check.h"
#include "cohort/cohort.h"

using namespace cohort;
using namespace cohort::testing;

namespace {

const DataType kBadType = static_cast<DataType>(42);
const ReduceOp kBadOp = static_cast<ReduceOp>(42);
const std::string kNotAType = "data type 42 is not a cohort::DataType (0 to 8)";
const std::string kNotAnOp = "reduce op 42 is not a cohort::ReduceOp (0 to 4)";

// Every entry point that takes a tensor or a reduce op, with a bad value, on this rank only.
void refuse_bad_values() {
  std::vector<float> v(6, 1.0f);
  Tensor bad{v.data(), kBadType, {6}};
  expect_error<InvalidArgument>([&] { allreduce("b.allreduce", bad); }, kNotAType,
                                "allreduce of a bad data type");
  expect_error<InvalidArgument>([&] { allreduce("b.op", Tensor::of(v), Tensor::of(v), {kBadOp}); },
                                kNotAnOp, "allreduce with a bad reduce op");
  expect_error<InvalidArgument>(
      [&] {
        grouped_allreduce("b.group", {Tensor::of(v), bad});
      },
      "grouped allreduce member 1: 'b.group': input " + kNotAType,
      "a group member of a bad data type");
  expect_error<InvalidArgument>([&] { grouped_allreduce("b.gop", {Tensor::of(v)}, {kBadOp}); },
                                kNotAnOp, "grouped allreduce with a bad reduce op");
  expect_error<InvalidArgument>([&] { broadcast("b.broadcast", bad, 0); }, kNotAType,
                                "broadcast of a bad data type");
  expect_error<InvalidArgument>([&] { allgather("b.allgather", bad); }, kNotAType,
                                "allgather of a bad data type");
  expect_error<InvalidArgument>([&] { alltoall("b.alltoall", bad); }, kNotAType,
                                "alltoall of a bad data type");
  expect_error<InvalidArgument>([&] { reducescatter("b.rs", bad); }, kNotAType,
                                "reducescatter of a bad data type");
  expect_error<InvalidArgument>([&] { reducescatter("b.rsop", Tensor::of(v), {kBadOp}); }, kNotAnOp,
                                "reducescatter with a bad reduce op");
}

void check_sum(const std::string& name) {
  int n = size();
  std::vector<int64_t> v(5, rank() + 1);
  allreduce(name, Tensor::of(v));
  check(v[0] == n * (n + 1) / 2 && v[4] == v[0], "'" + name + "' sums after the bad calls");
}

}  // namespace

int main() {
  g_program = "bad_enum_check";
  cohort::init();
  const int me = rank();
  const int bad_rank = 1;
  check(size() >= 2, "needs at least 2 ranks");

  if (me == bad_rank) refuse_bad_values();
  check_sum("after bad values");

  // The bad rank submits "x" wrongly, then retries it correctly: the others' "x" just waits for
  // the retry, and completes.
  std::vector<float> x(4, 1.0f);
  if (me == bad_rank) {
    Tensor bad{x.data(), kBadType, {4}};
    expect_error<InvalidArgument>([&] { allreduce("x", bad); }, kNotAType, "'x' of a bad type");
  }
  allreduce("x", Tensor::of(x));
  check(x[0] == static_cast<float>(size()), "'x' retried with a good type sums");

  // The same with a bad reduce op, retried with another shape: the usual mismatch on every rank.
  std::vector<float> y(me == bad_rank ? 3 : 4, 1.0f);
  if (me == bad_rank) {
    expect_error<InvalidArgument>([&] { allreduce("y", Tensor::of(y), Tensor::of(y), {kBadOp}); },
                                  kNotAnOp, "'y' with a bad op");
  }
  expect_error<MismatchError>([&] { allreduce("y", Tensor::of(y)); }, "allreduce 'y'",
                              "'y' retried with another shape");

  check_sum("after the mismatch");
  cohort::shutdown();
  std::cout << "rank " << me << ": " << g_checks << " checks passed" << std::endl;
  return 0;
}
