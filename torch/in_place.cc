#include "in_place.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/variable.h>

#include <string>

#include "cohort/errors.h"

namespace cohort::torch::detail {

void check_in_place(const at::Tensor& tensor, std::string_view what) {
  if (!at::GradMode::is_enabled() || !tensor.requires_grad()) return;
  std::string where = "cohort.torch." + std::string(what) + ": ";
  if (tensor.is_view() && tensor._base().is_leaf() && tensor._base().requires_grad()) {
    throw InvalidArgument(where +
                          "a view of a leaf Variable that requires grad is being used in an "
                          "in-place operation.");
  }
  if (tensor.is_leaf()) {
    throw InvalidArgument(where +
                          "a leaf Variable that requires grad is being used in an in-place "
                          "operation.");
  }
}

void mark_modified(const at::Tensor& tensor) {
  ::torch::autograd::impl::bump_version(tensor);
}

}  // namespace cohort::torch::detail
