// Making every rank start from the same model and optimizer: broadcast of a module's parameters
// and buffers, of an optimizer's whole state (state tensors and hyperparameters), and of any
// serializable object; and allgather of objects.
//
//   cohort::torch::broadcast_parameters(model->named_parameters(), 0);
//   cohort::torch::broadcast_optimizer_state(*optimizer, 0);
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <sstream>
#include <string>
#include <vector>

#include <cereal/archives/binary.hpp>

#include "cohort/cohort.h"

namespace cohort::torch {

// Overwrites every tensor with root's, in place (one broadcast per tensor, named after it).
// Every rank passes the same names, shapes and dtypes.
void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& tensors, int root,
                          ProcessSet set = {});
// A module's parameters and buffers.
void broadcast_parameters(const ::torch::nn::Module& module, int root, ProcessSet set = {});

// Makes the optimizer's state equal to root's: every param group's hyperparameters (lr,
// momentum, betas, eps, weight decay, ...) and every per-parameter state tensor (momentum
// buffers, Adam's step and moments), created here if this rank has none yet (a fresh optimizer
// on a joining rank). SGD, Adam, AdamW, Adagrad and RMSprop; others: InvalidArgument.
void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root, ProcessSet set = {});

// The optimizer's whole state as bytes: what broadcast_optimizer_state sends, and what TorchState
// commits. Native byte order: for the ranks of one job, not for files moved between machines.
std::string save_optimizer_state(::torch::optim::Optimizer& optimizer);
// Puts bytes from save_optimizer_state back; checks everything (the optimizer's kind, the number
// and shapes of its parameters) before it changes anything, and throws InvalidArgument if a check
// fails.
void load_optimizer_state(::torch::optim::Optimizer& optimizer, std::string_view bytes);

// The core's byte collectives (cohort/cohort.h), under the adapter's names.
using cohort::allgather_bytes;
using cohort::broadcast_bytes;

// Any cereal-serializable object, from root to every rank.
template <typename T>
T broadcast_object(const T& object, int root = 0, std::string name = "broadcast_object",
                   ProcessSet set = {}) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(object);
  }
  std::istringstream in(broadcast_bytes(std::move(out).str(), root, std::move(name), set),
                        std::ios::binary);
  T result;
  {
    cereal::BinaryInputArchive archive(in);
    archive(result);
  }
  return result;
}

// Every rank's object, in rank order.
template <typename T>
std::vector<T> allgather_object(const T& object, std::string name = "allgather_object",
                                ProcessSet set = {}) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(object);
  }
  std::vector<T> result;
  for (const std::string& bytes : allgather_bytes(std::move(out).str(), std::move(name), set)) {
    std::istringstream in(bytes, std::ios::binary);
    cereal::BinaryInputArchive archive(in);
    archive(result.emplace_back());
  }
  return result;
}

}  // namespace cohort::torch
