// A program built outside Cohort's tree against the installed headers and library: joins the job,
// sums each rank's number over every rank, checks the result, commits it in an elastic State (whose
// header needs cereal) and leaves. Exits 1 if the sum is wrong.
#include <cohort/cohort.h>
#include <cohort/elastic/state.h>

#include <cstdio>
#include <vector>

int main() {
  cohort::init();
  const int rank = cohort::rank();
  const int size = cohort::size();
  std::vector<double> values(1000, rank + 1.0);
  cohort::allreduce("hello", cohort::Tensor::of(values));
  const double expected = size * (size + 1) / 2.0;
  int wrong = 0;
  for (double v : values) wrong += v != expected;
  cohort::elastic::State state;
  state.track("values", values);
  state.commit();
  std::printf("hello_package: rank %d of %d (%.*s): sum %g, expected %g, %llu commit\n", rank, size,
              static_cast<int>(cohort::backend_name().size()), cohort::backend_name().data(),
              values[0], expected, static_cast<unsigned long long>(state.commit_count()));
  cohort::shutdown();
  return wrong == 0 ? 0 : 1;
}
