// Runs alone or under cohortrun: DistributedOptimizer gives the weights of single-process
// training on the concatenated batch (SGD with momentum, Adam; backward_passes_per_step = 2; a
// parameter that only rank 0 uses; gradient_predivide_factor), refuses too many backward passes,
// and broadcast_parameters / broadcast_optimizer_state make fresh ranks equal to a trained rank 0
// (SGD momentum, Adam, AdamW, Adagrad, RMSprop). load_optimizer_state refuses bad bytes and
// changes nothing then.
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/torch.h"

using namespace cohort::testing;
namespace ct = cohort::torch;

namespace {

int g_rank = 0;
int g_size = 1;
constexpr int64_t kRowsPerRank = 4;

// Two layers, and a head that only rank 0's loss uses.
struct NetImpl : ::torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", ::torch::nn::Linear(3, 5))),
        fc2(register_module("fc2", ::torch::nn::Linear(5, 1))),
        side(register_module("side", ::torch::nn::Linear(3, 1))) {}
  ::torch::nn::Linear fc1, fc2, side;
};
TORCH_MODULE(Net);

Net make_net(uint64_t seed) {
  ::torch::manual_seed(seed);
  return Net();
}

// The whole job's batch: every rank can make it, and takes its rows.
std::pair<at::Tensor, at::Tensor> global_batch(int step) {
  ::torch::manual_seed(1000 + step);
  at::Tensor x = ::torch::randn({kRowsPerRank * g_size, 3});
  at::Tensor y = ::torch::randn({kRowsPerRank * g_size, 1});
  return {x, y};
}

// Rank r's loss on its rows: the mean squared error, plus (on rank 0 only) the side head's term.
at::Tensor rank_loss(Net& net, const at::Tensor& x, const at::Tensor& y, int r) {
  at::Tensor loss = ::torch::mse_loss(net->fc2(::torch::tanh(net->fc1(x))), y);
  if (r == 0) loss = loss + 0.3 * net->side(x).sum();
  return loss;
}

using MakeOptimizer = std::function<std::shared_ptr<::torch::optim::Optimizer>(Net&)>;

// What averaging the ranks' gradients computes: the mean of the rank losses on one process.
Net train_reference(const MakeOptimizer& make, int steps) {
  Net net = make_net(7);
  auto optimizer = make(net);
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = global_batch(step);
    optimizer->zero_grad();
    at::Tensor loss = ::torch::mse_loss(net->fc2(::torch::tanh(net->fc1(x))), y) +
                      0.3 * net->side(x.narrow(0, 0, kRowsPerRank)).sum() / g_size;
    loss.backward();
    optimizer->step();
  }
  return net;
}

Net train_distributed(const MakeOptimizer& make, int steps,
                      ct::DistributedOptimizerOptions options) {
  // Each rank starts from its own weights; broadcast_parameters makes them rank 0's (seed 7).
  Net net = make_net(g_rank == 0 ? 7 : 100 + g_rank);
  ct::broadcast_parameters(*net, 0);
  ct::DistributedOptimizer optimizer(make(net), net->named_parameters(), options);
  int passes = options.backward_passes_per_step;
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = global_batch(step);
    at::Tensor mine_x = x.narrow(0, g_rank * kRowsPerRank, kRowsPerRank);
    at::Tensor mine_y = y.narrow(0, g_rank * kRowsPerRank, kRowsPerRank);
    optimizer.zero_grad();
    // Several passes over parts of the rows accumulate the same gradient as one over all of them.
    int64_t part = kRowsPerRank / passes;
    for (int p = 0; p < passes; ++p) {
      at::Tensor px = mine_x.narrow(0, p * part, part), py = mine_y.narrow(0, p * part, part);
      at::Tensor loss = ::torch::mse_loss(net->fc2(::torch::tanh(net->fc1(px))), py) / passes;
      if (g_rank == 0) loss = loss + 0.3 * net->side(px).sum();
      loss.backward();
    }
    optimizer.step();
  }
  return net;
}

void expect_same_weights(Net& got, Net& want, const std::string& what) {
  auto want_params = want->named_parameters();
  for (const auto& item : got->named_parameters()) {
    const at::Tensor& w = want_params[item.key()];
    check(at::allclose(item.value(), w, 1e-4, 1e-5),
          what + ": " + item.key() + " differs from single-process training");
  }
}

void check_training() {
  MakeOptimizer sgd = [](Net& net) {
    return std::make_shared<::torch::optim::SGD>(net->parameters(),
                                                 ::torch::optim::SGDOptions(0.1).momentum(0.9));
  };
  MakeOptimizer adam = [](Net& net) {
    return std::make_shared<::torch::optim::Adam>(net->parameters(),
                                                  ::torch::optim::AdamOptions(0.01));
  };
  const int steps = 4;
  for (auto& [name, make] :
       std::vector<std::pair<std::string, MakeOptimizer>>{{"sgd", sgd}, {"adam", adam}}) {
    Net want = train_reference(make, steps);
    Net plain = train_distributed(make, steps, {.name = "grads." + name});
    expect_same_weights(plain, want, name);
    Net accumulated =
        train_distributed(make, steps, {.backward_passes_per_step = 2, .name = "acc." + name});
    expect_same_weights(accumulated, want, name + " with backward_passes_per_step = 2");
    if (g_size > 1 && name == "sgd") {
      // The comparison can tell: SGD on summed gradients (a step the world's size times as long)
      // ends elsewhere. (Adam is nearly blind to the scale of the gradients.)
      Net summed =
          train_distributed(make, steps, {.op = cohort::ReduceOp::kSum, .name = "sum." + name});
      check(!at::allclose(summed->fc1->weight, want->fc1->weight, 1e-4, 1e-5),
            name + ": summed gradients should not match the average's weights");
    }
    Net predivided =
        train_distributed(make, steps, {.gradient_predivide_factor = 4, .name = "pre." + name});
    expect_same_weights(predivided, want, name + " with gradient_predivide_factor = 4");
  }
}

void check_misuse() {
  Net net = make_net(7);
  auto sgd = std::make_shared<::torch::optim::SGD>(net->parameters(), 0.1);
  ct::DistributedOptimizer optimizer(sgd, net->named_parameters(),
                                     {.backward_passes_per_step = 2, .name = "misuse"});
  at::Tensor x = ::torch::ones({2, 3});
  for (int i = 0; i < 3; ++i) net->fc2(net->fc1(x)).sum().backward();
  expect_error<cohort::InvalidArgument>([&] { optimizer.step(); },
                                        "more than backward_passes_per_step (2)",
                                        "three backward passes with backward_passes_per_step 2");
  optimizer.zero_grad();  // what was counted went with the gradients
  net->fc2(net->fc1(x)).sum().backward();
  optimizer.step();
  expect_error<cohort::InvalidArgument>(
      [&] {
        ct::DistributedOptimizer(sgd, net->named_parameters(),
                                 {.op = cohort::ReduceOp::kSum, .gradient_predivide_factor = 2});
      },
      "only supported with op = average", "predivide with sum");

  // Gradient clipping between synchronize() and step_without_sync().
  optimizer.zero_grad();
  net->fc2(net->fc1(x * (g_rank + 1))).sum().backward();
  optimizer.synchronize();
  ::torch::nn::utils::clip_grad_norm_(net->parameters(), 0.5);
  auto clipped = ct::allgather(net->fc1->weight.grad().unsqueeze(0), "clipped");
  for (int r = 1; r < g_size; ++r) check(at::equal(clipped[r], clipped[0]), "same clipped grads");
  optimizer.step_without_sync();
}

// ---- broadcast_optimizer_state ----

using MakeOn = std::function<std::shared_ptr<::torch::optim::Optimizer>(Net&, double lr)>;

void check_broadcast_state(const std::string& name, const MakeOn& make) {
  Net net = make_net(7);
  auto optimizer = make(net, g_rank == 0 ? 0.05 : 0.5);
  if (g_rank == 0) {  // rank 0 has trained; the others are fresh and have no state
    for (int step = 0; step < 3; ++step) {
      optimizer->zero_grad();
      auto [x, y] = global_batch(step);
      rank_loss(net, x, y, 0).backward();
      optimizer->step();
    }
  }
  ct::broadcast_parameters(*net, 0);
  ct::broadcast_optimizer_state(*optimizer, 0);
  check(optimizer->param_groups()[0].options().get_lr() == 0.05, name + ": lr is rank 0's");
  check(optimizer->state().size() == net->parameters().size(),
        name + ": state for every parameter");
  std::vector<std::string> all =
      ct::allgather_bytes(ct::save_optimizer_state(*optimizer), "state." + name);
  for (int r = 1; r < g_size; ++r) check(all[r] == all[0], name + ": rank state equals rank 0's");

  // The same gradient now gives the same step everywhere.
  optimizer->zero_grad();
  auto [x, y] = global_batch(9);
  rank_loss(net, x, y, 1).backward();
  optimizer->step();
  at::Tensor w = net->fc1->weight.detach();
  at::Tensor root_w = ct::broadcast(w, 0, "after." + name);
  check(at::equal(w, root_w), name + ": the next step agrees with rank 0's");
}

void check_broadcast_states() {
  using namespace ::torch::optim;
  check_broadcast_state("sgd", [](Net& n, double lr) {
    return std::make_shared<SGD>(n->parameters(), SGDOptions(lr).momentum(0.9).nesterov(true));
  });
  check_broadcast_state("adam", [](Net& n, double lr) {
    return std::make_shared<Adam>(n->parameters(), AdamOptions(lr).amsgrad(true));
  });
  check_broadcast_state("adamw", [](Net& n, double lr) {
    return std::make_shared<AdamW>(n->parameters(), AdamWOptions(lr).weight_decay(0.1));
  });
  check_broadcast_state("adagrad", [](Net& n, double lr) {
    return std::make_shared<Adagrad>(n->parameters(), AdagradOptions(lr));
  });
  check_broadcast_state("rmsprop", [](Net& n, double lr) {
    return std::make_shared<RMSprop>(n->parameters(),
                                     RMSpropOptions(lr).momentum(0.5).centered(true));
  });
}

void check_load_validation() {
  Net net = make_net(7);
  ::torch::optim::Adam adam(net->parameters(), ::torch::optim::AdamOptions(0.01));
  net->fc1(::torch::ones({1, 3})).sum().backward();
  adam.step();
  std::string before = ct::save_optimizer_state(adam);
  ::torch::optim::SGD sgd(net->parameters(), 0.1);
  expect_error<cohort::InvalidArgument>(
      [&] { ct::load_optimizer_state(adam, ct::save_optimizer_state(sgd)); },
      "of a sgd optimizer, this one is adam", "SGD state into Adam");
  expect_error<cohort::InvalidArgument>(
      [&] {
        ct::load_optimizer_state(adam, std::string_view(before).substr(0, before.size() - 3));
      },
      "truncated", "truncated state");
  Net other = make_net(8);  // same shapes; a different parameter count is refused
  ::torch::optim::Adam small(other->fc1->parameters(), ::torch::optim::AdamOptions(0.01));
  expect_error<cohort::InvalidArgument>([&] { ct::load_optimizer_state(small, before); },
                                        "param group 0 differs", "state of another model");
  check(ct::save_optimizer_state(adam) == before, "a refused load changed nothing");
  ct::load_optimizer_state(adam, before);
  check(ct::save_optimizer_state(adam) == before, "load of its own state round-trips");

  ::torch::optim::LBFGS lbfgs(net->parameters());
  expect_error<cohort::InvalidArgument>([&] { ct::broadcast_optimizer_state(lbfgs, 0); },
                                        "supported: SGD, Adam", "LBFGS");
}

}  // namespace

int main() {
  g_program = "torch_training_check";
  cohort::init();
  g_rank = cohort::rank();
  g_size = cohort::size();
  check_training();
  check_misuse();
  check_broadcast_states();
  check_load_validation();
  std::cout << "torch_training_check: rank " << g_rank << " of " << g_size << ": " << g_checks
            << " checks passed" << std::endl;
  cohort::shutdown();
  return 0;
}
