// TorchState: a module's parameters and buffers tracked as buffers, its optimizer as bytes, all
// of them the same on every rank of a data-parallel job at one commit (elastic::ValueScope).
#include <span>

#include "cohort/torch/broadcast.h"
#include "cohort/torch/collectives.h"
#include "cohort/torch/state.h"
#include "optimizer_state.h"
#include "tensor_bridge.h"

namespace cohort::torch {

namespace {

// A span of T over the tensor's memory, tracked under `name`.
template <typename T>
void track_as(elastic::State& state, const std::string& name, const at::Tensor& tensor) {
  state.track(name,
              std::span<T>(static_cast<T*>(tensor.data_ptr()), static_cast<size_t>(tensor.numel())),
              elastic::ValueScope::kSameOnEveryRank);
}

void track_tensor(elastic::State& state, const std::string& name, const at::Tensor& tensor) {
  detail::check_host_tensor(tensor, "TorchState('" + name + "')");
  if (!tensor.is_contiguous()) {
    // The State keeps a view of the memory; a contiguous copy would not be the module's tensor.
    throw InvalidArgument("cohort.torch.TorchState: '" + name +
                          "' is not contiguous; make the module's tensors contiguous first");
  }
  switch (to_cohort(tensor.scalar_type())) {
    case DataType::kBool:
      return track_as<bool>(state, name, tensor);
    case DataType::kUInt8:
      return track_as<uint8_t>(state, name, tensor);
    case DataType::kInt8:
      return track_as<int8_t>(state, name, tensor);
    case DataType::kInt32:
      return track_as<int32_t>(state, name, tensor);
    case DataType::kInt64:
      return track_as<int64_t>(state, name, tensor);
    case DataType::kFloat16:
      return track_as<float16>(state, name, tensor);
    case DataType::kBFloat16:
      return track_as<bfloat16>(state, name, tensor);
    case DataType::kFloat32:
      return track_as<float>(state, name, tensor);
    case DataType::kFloat64:
      return track_as<double>(state, name, tensor);
  }
}

}  // namespace

TorchState::TorchState(std::shared_ptr<::torch::nn::Module> module,
                       std::shared_ptr<::torch::optim::Optimizer> optimizer, std::string label)
    : elastic::State(std::move(label)),
      module_(std::move(module)),
      optimizer_(std::move(optimizer)) {
  if (!module_) throw InvalidArgument("cohort.torch.TorchState: the module is null");
  for (const auto& item : module_->named_parameters()) {
    track_tensor(*this, "model." + item.key(), item.value());
  }
  for (const auto& item : module_->named_buffers()) {
    if (item.value().defined()) track_tensor(*this, "model." + item.key(), item.value());
  }
  if (!optimizer_) return;
  ::torch::optim::Optimizer* opt = optimizer_.get();
  track_bytes(
      "optimizer", "cohort.torch.optimizer." + detail::optimizer_kind(*opt),
      [opt] { return save_optimizer_state(*opt); },
      [opt](std::string_view bytes) { return detail::parse_optimizer_state(*opt, bytes); },
      elastic::ValueScope::kSameOnEveryRank);
}

}  // namespace cohort::torch
