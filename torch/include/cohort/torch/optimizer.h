// DistributedOptimizer: wraps any torch::optim::Optimizer so that step() first averages every
// parameter's gradient across the ranks, with one grouped allreduce per step.
//
//   auto sgd = std::make_shared<torch::optim::SGD>(model->parameters(), 0.1);
//   cohort::torch::DistributedOptimizer opt(sgd, model->named_parameters());
//   loss.backward();
//   opt.step();                        // allreduce of all gradients, then sgd->step()
//
// Gradient clipping: opt.synchronize(); clip...; opt.step_without_sync() (Horovod's
// skip_synchronize). The group is named after the parameters, in name order, so it does not
// depend on the order in which gradients became ready. A parameter with no gradient on this rank
// (unused in this step's graph) contributes zeros, as in Horovod, so no rank waits for it.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <memory>
#include <string>
#include <vector>

#include "cohort/cohort.h"

namespace cohort::torch {

// How a DistributedOptimizer combines the ranks' gradients.
struct DistributedOptimizerOptions {
  // How gradients combine: average (the default) or sum; also min/max/product, as Horovod.
  ReduceOp op = ReduceOp::kAverage;
  // Backward passes accumulated locally between steps; step() refuses more than this many.
  int backward_passes_per_step = 1;
  // For an average: gradients are divided by this before the sum and multiplied by
  // factor / size after it (prescale 1/f, postscale f), to keep float16 sums in range.
  double gradient_predivide_factor = 1.0;
  ProcessSet process_set;      // the ranks that train together; all of them by default
  std::string name = "grads";  // the grouped allreduce's name (one optimizer: any name)
};

// An optimizer whose step() first combines every rank's gradients (how to use it: the top of
// optimizer.h). Used from one thread; every rank of the process set steps together.
class DistributedOptimizer {
 public:
  // `named_parameters` are the parameters the optimizer updates (module->named_parameters()).
  DistributedOptimizer(std::shared_ptr<::torch::optim::Optimizer> optimizer,
                       const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
                       DistributedOptimizerOptions options = {});
  ~DistributedOptimizer();

  // Averages the gradients now (the allreduce of this step); a later step() does not repeat it.
  void synchronize();
  // synchronize() unless already done this step, then the wrapped optimizer's step().
  void step();
  // The wrapped optimizer's step() without any allreduce (after synchronize() and clipping).
  void step_without_sync();
  // Sets the wrapped optimizer's gradients to none (undefined), and forgets the backward passes
  // counted since the last step (they went into the gradients dropped).
  void zero_grad();

  // The wrapped optimizer (its param groups, hyperparameters and state).
  ::torch::optim::Optimizer& optimizer() { return *optimizer_; }
  // The options given to the constructor.
  const DistributedOptimizerOptions& options() const { return options_; }

 private:
  struct Hooks;  // counts backward passes per parameter
  std::shared_ptr<::torch::optim::Optimizer> optimizer_;
  std::vector<std::string> names_;      // sorted
  std::vector<at::Tensor> parameters_;  // in names_ order
  DistributedOptimizerOptions options_;
  std::unique_ptr<Hooks> hooks_;
  bool synchronized_ = false;
};

}  // namespace cohort::torch
