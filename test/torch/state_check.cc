// Runs alone or under cohortrun: TorchState tracks a module's parameters and buffers and its
// optimizer; sync makes every rank rank 0's (optimizer state included, though only rank 0 has
// stepped), commit and restore return to the snapshot, reset callbacks run, other values tracked
// beside work; broadcast_object and allgather_object; modules TorchState must refuse.
#include <torch/torch.h>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>

#include <map>
#include <string>
#include <vector>

#include "check.h"
#include "cohort/torch.h"

using namespace cohort::testing;
namespace ct = cohort::torch;

namespace {

int g_rank = 0;
int g_size = 1;

// Everything the State holds, as bytes: the module's tensors and the optimizer's state.
std::string snapshot(::torch::nn::Module& module, ::torch::optim::Optimizer& optimizer) {
  std::string out;
  for (const at::Tensor& t : module.parameters()) {
    out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  for (const at::Tensor& t : module.buffers()) {
    out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return out + ct::save_optimizer_state(optimizer);
}

void train_step(::torch::nn::Sequential& model, ::torch::optim::Optimizer& optimizer, int seed) {
  ::torch::manual_seed(seed);
  optimizer.zero_grad();
  model->forward(::torch::randn({6, 3})).pow(2).mean().backward();
  optimizer.step();
}

void check_state() {
  ::torch::manual_seed(10 + g_rank);  // every rank starts different
  ::torch::nn::Sequential model(::torch::nn::Linear(3, 4), ::torch::nn::BatchNorm1d(4),
                                ::torch::nn::Linear(4, 2));
  auto adam = std::make_shared<::torch::optim::Adam>(model->parameters(),
                                                     ::torch::optim::AdamOptions(0.01));
  ct::TorchState state(model.ptr(), adam);
  int epoch = g_rank == 0 ? 5 : 0;
  state.track("epoch", epoch);
  int resets = 0;
  state.add_reset_callback([&] {
    ++resets;
    for (auto& group : adam->param_groups()) group.options().set_lr(0.01 * cohort::size());
  });
  check(state.names().size() == model->parameters().size() + model->buffers().size() + 2,
        "every parameter, buffer, the optimizer and the epoch are tracked");

  // Only rank 0 has stepped: its optimizer has state, the others' none yet.
  if (g_rank == 0) train_step(model, *adam, 1);
  state.sync();
  check(epoch == 5, "sync: the epoch is rank 0's");
  check(adam->state().size() == model->parameters().size(), "sync: the optimizer state appeared");
  std::vector<std::string> all = ct::allgather_bytes(snapshot(*model, *adam), "snapshots");
  for (int r = 1; r < g_size; ++r) check(all[r] == all[0], "sync: every rank equals rank 0");
  check(state.last_sync_kept().empty(), "sync: no rank had restored, so every value was sent");

  // Commit, change everything, restore.
  train_step(model, *adam, 2);
  state.commit();
  std::string committed = snapshot(*model, *adam);
  train_step(model, *adam, 3);
  epoch = 99;
  check(snapshot(*model, *adam) != committed, "a step changed the tracked values");
  state.restore();
  check(snapshot(*model, *adam) == committed, "restore: the module and optimizer are committed");
  check(epoch == 5, "restore: the epoch is committed");

  // A reset: the callbacks scale the learning rate, and a sync after it keeps everyone equal.
  state.run_reset_callbacks();
  check(resets == 1, "the reset callback ran once");
  check(adam->param_groups()[0].options().get_lr() == 0.01 * g_size, "lr scaled by the size");
  state.sync();
  all = ct::allgather_bytes(snapshot(*model, *adam), "snapshots.after_reset");
  for (int r = 1; r < g_size; ++r) check(all[r] == all[0], "sync after reset: equal");
  // Every rank restored the commit: the module and the optimizer stayed each rank's own.
  check(state.last_sync_kept().size() == model->parameters().size() + model->buffers().size() + 1,
        "sync after restore: every parameter, buffer and the optimizer kept, the epoch sent");
}

// A commit taken before the optimizer's first step: restore removes the state the step created.
void check_restore_before_first_step() {
  ::torch::nn::Sequential model(::torch::nn::Linear(3, 2));
  auto sgd = std::make_shared<::torch::optim::SGD>(model->parameters(),
                                                   ::torch::optim::SGDOptions(0.1).momentum(0.9));
  ct::TorchState state(model.ptr(), sgd, "fresh");
  state.sync();
  state.commit();
  std::string committed = snapshot(*model, *sgd);
  train_step(model, *sgd, 4);
  check(!sgd->state().empty(), "the first step created momentum buffers");
  state.restore();
  check(sgd->state().empty(), "restore: no optimizer state, as committed");
  check(snapshot(*model, *sgd) == committed, "restore: the committed weights");
}

void check_refusals() {
  ::torch::nn::Linear linear(2, 3);
  {
    at::NoGradGuard no_grad;
    linear->weight.set_data(at::ones({2, 3}).t());  // a non-contiguous parameter
  }
  expect_error<cohort::InvalidArgument>([&] { ct::TorchState(linear.ptr()); }, "not contiguous",
                                        "a non-contiguous parameter");
  ::torch::nn::Linear plain(2, 3);
  expect_error<cohort::InvalidArgument>(
      [&] {
        ct::TorchState(plain.ptr(), std::make_shared<::torch::optim::LBFGS>(plain->parameters()));
      },
      "supported: SGD", "an optimizer it cannot save");
}

void check_objects() {
  std::map<std::string, int> config = {{"rank", g_rank}, {"size", g_size}};
  auto root = ct::broadcast_object(config, 0);
  check(root.at("rank") == 0 && root.at("size") == g_size, "broadcast_object of a map");
  std::string text(static_cast<size_t>(g_rank) * 3, static_cast<char>('a' + g_rank));
  std::vector<std::string> texts = ct::allgather_object(text);
  check(static_cast<int>(texts.size()) == g_size, "allgather_object: one per rank");
  for (int r = 0; r < g_size; ++r) {
    check(texts[r] == std::string(static_cast<size_t>(r) * 3, static_cast<char>('a' + r)),
          "allgather_object: rank " + std::to_string(r) + "'s string (empty on rank 0)");
  }
  std::string empty = ct::broadcast_bytes(g_rank == 0 ? "" : "ignored", 0, "empty");
  check(empty.empty(), "broadcast_bytes of nothing");
}

}  // namespace

int main() {
  g_program = "torch_state_check";
  cohort::init();
  g_rank = cohort::rank();
  g_size = cohort::size();
  check_state();
  check_restore_before_first_step();
  check_refusals();
  check_objects();
  std::cout << "torch_state_check: rank " << g_rank << " of " << g_size << ": " << g_checks
            << " checks passed" << std::endl;
  cohort::shutdown();
  return 0;
}
