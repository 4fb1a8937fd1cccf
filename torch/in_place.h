// Private to the torch adapter: what an in-place collective owes autograd, as torch's own in-place
// operations (Tensor::add_) do. A leaf that requires grad, or a view of one, is refused while grad
// mode is on; the tensor's version counter is bumped, so that backward() refuses a tensor it saved
// that the collective overwrote instead of silently using the new values.
#pragma once

#include <ATen/ATen.h>

#include <string_view>

namespace cohort::torch::detail {

// Throws InvalidArgument in torch's words when `tensor` may not be written in place: "a leaf
// Variable that requires grad is being used in an in-place operation." `what` names the call
// ("allreduce_").
void check_in_place(const at::Tensor& tensor, std::string_view what);

// Marks `tensor` modified in place (its version counter, shared with its views and base, goes up).
void mark_modified(const at::Tensor& tensor);

}  // namespace cohort::torch::detail
