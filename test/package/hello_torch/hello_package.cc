// A program built outside Cohort's tree against the installed Cohort::torch: sums each rank's
// number over every rank as a torch tensor, checks the result, tracks a module in a TorchState and
// leaves. Prints what test/package/hello prints, so package_test.sh checks both alike.
#include <cohort/torch.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  cohort::init();
  const int rank = cohort::rank();
  const int size = cohort::size();
  at::Tensor values = at::full({1000}, rank + 1.0, at::kDouble);
  cohort::torch::allreduce_(values, {}, "hello");
  const double expected = size * (size + 1) / 2.0;
  const bool right = values.eq(expected).all().item<bool>();
  ::torch::nn::Linear model(4, 2);
  cohort::torch::TorchState state(model.ptr());
  state.sync();
  state.commit();
  std::printf("hello_package: rank %d of %d (%.*s): sum %g, expected %g, %llu commit (torch)\n",
              rank, size, static_cast<int>(cohort::backend_name().size()),
              cohort::backend_name().data(), values[0].item<double>(), expected,
              static_cast<unsigned long long>(state.commit_count()));
  cohort::shutdown();
  return right ? 0 : 1;
}
