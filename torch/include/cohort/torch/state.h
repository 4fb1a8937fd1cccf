// TorchState: an elastic::State that tracks a module and an optimizer, for elastic::run.
//
//   cohort::torch::TorchState state(model, optimizer);   // parameters, buffers, optimizer state
//   state.track("epoch", epoch);  state.track("sampler", sampler);
//   state.add_reset_callback([&] { scale_lr(optimizer, cohort::size()); });
//   cohort::elastic::run(state, [&](cohort::elastic::State& s) { ... s.commit(); ... });
//
// The module's parameters and buffers are tracked as buffers (commit = memcpy; sync =
// broadcast); the optimizer's state, which torch creates lazily at the first step and which
// changes size, as bytes (save_optimizer_state / load_optimizer_state). The module's tensors
// must stay in place (no reassignment of a parameter) for the State's lifetime.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>

#include "cohort/elastic/state.h"

namespace cohort::torch {

// An elastic::State that tracks a module and an optimizer (how to use it: the top of state.h).
class TorchState : public elastic::State {
 public:
  // Tracks `module` (as "model.<name>" for each parameter and buffer) and, if given,
  // `optimizer` (as "optimizer"). Only CPU tensors: CUDA modules get InvalidArgument.
  TorchState(std::shared_ptr<::torch::nn::Module> module,
             std::shared_ptr<::torch::optim::Optimizer> optimizer = nullptr,
             std::string label = "torch");

  // The tracked module.
  ::torch::nn::Module& module() { return *module_; }
  // The tracked optimizer, or null if none was given.
  ::torch::optim::Optimizer* optimizer() { return optimizer_.get(); }

 private:
  std::shared_ptr<::torch::nn::Module> module_;
  std::shared_ptr<::torch::optim::Optimizer> optimizer_;
};

}  // namespace cohort::torch
