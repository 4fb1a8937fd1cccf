// Private to the torch adapter: an optimizer's state as compact bytes, for
// broadcast_optimizer_state and TorchState. Shared by broadcast.cc (which implements it) and
// state.cc.
#pragma once

#include <torch/optim/optimizer.h>

#include <functional>
#include <string>
#include <string_view>

namespace cohort::torch::detail {

// "sgd", "adam", "adamw", "adagrad" or "rmsprop"; InvalidArgument for any other optimizer.
std::string optimizer_kind(const ::torch::optim::Optimizer& optimizer);

// Checks `bytes` against `optimizer` (kind, param groups, parameter shapes) and builds the new
// state without touching the optimizer; the returned function installs it and cannot fail.
std::function<void()> parse_optimizer_state(::torch::optim::Optimizer& optimizer,
                                            std::string_view bytes);

}  // namespace cohort::torch::detail
