// DistributedOptimizer: one grouped allreduce of every gradient per step, with backward passes
// counted by hooks on the parameters.
#include <algorithm>
#include <atomic>
#include <numeric>

#include "cohort/torch/collectives.h"
#include "cohort/torch/optimizer.h"

namespace cohort::torch {

namespace {

constexpr const char* kWhere = "cohort.torch.DistributedOptimizer: ";

void check_options(const DistributedOptimizerOptions& options) {
  if (options.backward_passes_per_step < 1) {
    throw InvalidArgument(std::string(kWhere) +
                          "backward_passes_per_step must be at least 1, not " +
                          std::to_string(options.backward_passes_per_step));
  }
  if (!(options.gradient_predivide_factor > 0)) {
    throw InvalidArgument(std::string(kWhere) + "gradient_predivide_factor must be positive");
  }
  if (options.gradient_predivide_factor != 1.0 && options.op != ReduceOp::kAverage) {
    throw InvalidArgument(std::string(kWhere) +
                          "gradient_predivide_factor is only supported with op = average");
  }
  if (options.name.empty()) throw InvalidArgument(std::string(kWhere) + "the name is empty");
}

}  // namespace

// Backward passes per parameter since the last synchronize(), counted by a hook on each. The
// counts are shared with the hooks, which autograd may run on its own threads.
struct DistributedOptimizer::Hooks {
  std::shared_ptr<std::vector<std::atomic<int>>> passes;
  std::vector<std::pair<at::Tensor, unsigned>> registered;

  explicit Hooks(const std::vector<at::Tensor>& parameters)
      : passes(std::make_shared<std::vector<std::atomic<int>>>(parameters.size())) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      unsigned id =
          parameters[i].register_hook([passes = passes, i](const at::Tensor&) { ++(*passes)[i]; });
      registered.emplace_back(parameters[i], id);
    }
  }
  ~Hooks() {
    for (auto& [parameter, id] : registered) parameter.remove_hook(id);
  }
  int most() const {
    int most = 0;
    for (const auto& n : *passes) most = std::max(most, n.load());
    return most;
  }
  void reset() {
    for (auto& n : *passes) n = 0;
  }
};

DistributedOptimizer::DistributedOptimizer(
    std::shared_ptr<::torch::optim::Optimizer> optimizer,
    const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
    DistributedOptimizerOptions options)
    : optimizer_(std::move(optimizer)), options_(std::move(options)) {
  if (!optimizer_) throw InvalidArgument(std::string(kWhere) + "the optimizer is null");
  check_options(options_);
  // Sorted by name, so that the group's members are in the same order on every rank whatever
  // order the module registered them in. Frozen parameters have no gradient to average.
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& item : named_parameters) {
    if (item.value().defined() && item.value().requires_grad()) {
      named.emplace_back(item.key(), item.value());
    }
  }
  std::sort(named.begin(), named.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, parameter] : named) {
    names_.push_back(name);
    parameters_.push_back(parameter);
  }
  hooks_ = std::make_unique<Hooks>(parameters_);
}

DistributedOptimizer::~DistributedOptimizer() = default;

void DistributedOptimizer::synchronize() {
  int passes = hooks_->most();
  if (passes > options_.backward_passes_per_step) {
    throw InvalidArgument(
        std::string(kWhere) + "gradients were computed " + std::to_string(passes) +
        " times before step() or synchronize(), more than backward_passes_per_step (" +
        std::to_string(options_.backward_passes_per_step) +
        "). Increase backward_passes_per_step to accumulate gradients locally.");
  }
  std::vector<at::Tensor> grads;
  for (at::Tensor& parameter : parameters_) {
    // A parameter this rank's graph did not reach still takes part, with zeros, as in Horovod:
    // otherwise the other ranks would wait for it.
    if (!parameter.grad().defined()) parameter.mutable_grad() = at::zeros_like(parameter.detach());
    grads.push_back(parameter.grad());
  }
  AllreduceOptions reduce{.op = options_.op, .process_set = options_.process_set};
  if (options_.op == ReduceOp::kAverage) {
    reduce.prescale = 1.0 / options_.gradient_predivide_factor;
    reduce.postscale = options_.gradient_predivide_factor;
  }
  if (!grads.empty()) grouped_allreduce_(grads, reduce, options_.name);
  hooks_->reset();
  synchronized_ = true;
}

void DistributedOptimizer::step() {
  if (!synchronized_) synchronize();
  step_without_sync();
}

void DistributedOptimizer::step_without_sync() {
  optimizer_->step();
  synchronized_ = false;
}

void DistributedOptimizer::zero_grad() {
  for (auto& group : optimizer_->param_groups()) {
    for (at::Tensor& parameter : group.params()) {
      if (parameter.grad().defined()) parameter.mutable_grad() = at::Tensor();
    }
  }
  // The passes counted so far went into the gradients just dropped.
  hooks_->reset();
  synchronized_ = false;
}

}  // namespace cohort::torch
