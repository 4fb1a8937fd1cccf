// Broadcast of parameters and optimizer state, and the optimizer state's byte format.
//
// The format is Cohort's own, pickle-free and keyed by a parameter's index in param-group order
// (never by address, which differs between processes): a magic string, the optimizer's kind, each
// group's parameter count and hyperparameters (as doubles), then each parameter's state (its step
// and its state tensors, each shape, dtype and raw bytes), all length-prefixed, in native byte
// order (every rank of a job runs on the same architecture).
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cohort/torch/broadcast.h"
#include "cohort/torch/collectives.h"
#include "optimizer_state.h"
#include "tensor_bridge.h"

namespace cohort::torch {

namespace {

using ::torch::optim::Optimizer;
using ::torch::optim::OptimizerOptions;
using ::torch::optim::OptimizerParamState;

constexpr std::string_view kMagic = "cohort.torch.optimizer/1";

[[noreturn]] void bad_state(const std::string& what) {
  throw InvalidArgument("cohort.torch.load_optimizer_state: " + what);
}

// ---- Bytes ----

class Writer {
 public:
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void tensor(const at::Tensor& t) {
    u64(t.defined() ? 1 : 0);
    if (!t.defined()) return;
    detail::check_host_tensor(t, "save_optimizer_state");
    at::Tensor c = t.detach().contiguous();
    u64(static_cast<uint64_t>(to_cohort(c.scalar_type())));
    u64(c.dim());
    for (int64_t d : c.sizes()) i64(d);
    u64(c.nbytes());
    raw(c.data_ptr(), c.nbytes());
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint64_t u64() { return pod<uint64_t>(); }
  int64_t i64() { return pod<int64_t>(); }
  double f64() { return pod<double>(); }
  std::string_view str() {
    uint64_t n = u64();
    std::string_view s = take(n);
    return s;
  }
  // A tensor checked against the parameter it belongs to (same shape and dtype), or undefined.
  at::Tensor tensor(const at::Tensor& param, const std::string& what) {
    if (u64() == 0) return {};
    uint64_t dtype = u64();
    if (dtype >= static_cast<uint64_t>(kNumDataTypes)) bad_state(what + ": bad dtype");
    uint64_t dim = u64();
    if (dim > 64) bad_state(what + ": bad number of dimensions");
    std::vector<int64_t> shape;
    for (uint64_t i = 0; i < dim; ++i) shape.push_back(i64());
    at::ScalarType type = to_torch(static_cast<DataType>(dtype));
    if (at::IntArrayRef(shape) != param.sizes() || type != param.scalar_type()) {
      bad_state(what + " is " + detail::dtype_name(type) + " " + to_string(Shape(shape)) +
                ", but the parameter is " + detail::dtype_name(param.scalar_type()) + " " +
                to_string(Shape(param.sizes().begin(), param.sizes().end())));
    }
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type));
    uint64_t n = u64();
    if (n != t.nbytes()) bad_state(what + ": wrong byte count");
    std::string_view bytes = take(n);
    if (n > 0) std::memcpy(t.data_ptr(), bytes.data(), n);
    return t;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view take(uint64_t n) {
    if (n > in_.size() - pos_) bad_state("the bytes are truncated");
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <typename T>
  T pod() {
    T v;
    std::memcpy(&v, take(sizeof v).data(), sizeof v);
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
};

// ---- Optimizer kinds ----

// One parameter's state: the step (0 where the optimizer keeps none) and the state tensors, in
// the kind's fixed order, undefined where absent.
struct ParamSlots {
  int64_t step = 0;
  std::vector<at::Tensor> tensors;
};

// How to read and write one optimizer type's hyperparameters and per-parameter state.
struct Kind {
  std::string name;
  size_t num_hyper = 0;
  size_t num_slots = 0;
  std::function<std::vector<double>(const OptimizerOptions&)> get_hyper;
  std::function<void(OptimizerOptions&, const std::vector<double>&)> set_hyper;
  std::function<ParamSlots(const OptimizerParamState&)> read;
  std::function<std::unique_ptr<OptimizerParamState>(const ParamSlots&)> make;
};

// A Kind from typed accessors: Options and State are the optimizer's option and state types.
template <typename Options, typename State>
Kind make_kind(std::string name, size_t num_hyper, size_t num_slots,
               std::vector<double> (*get)(const Options&),
               void (*set)(Options&, const std::vector<double>&),
               std::vector<at::Tensor> (*read)(const State&),
               void (*write)(State&, const std::vector<at::Tensor>&)) {
  Kind k{std::move(name), num_hyper, num_slots};
  k.get_hyper = [get](const OptimizerOptions& o) { return get(static_cast<const Options&>(o)); };
  k.set_hyper = [set](OptimizerOptions& o, const std::vector<double>& v) {
    set(static_cast<Options&>(o), v);
  };
  k.read = [read](const OptimizerParamState& s) {
    const auto& state = static_cast<const State&>(s);
    ParamSlots slots{0, read(state)};
    if constexpr (requires { state.step(); }) slots.step = state.step();
    return slots;
  };
  k.make = [write](const ParamSlots& slots) {
    auto state = std::make_unique<State>();
    write(*state, slots.tensors);
    if constexpr (requires { state->step(slots.step); }) state->step(slots.step);
    return state;
  };
  return k;
}

template <typename Options>
std::vector<double> adam_hyper(const Options& o) {
  return {o.lr(),  std::get<0>(o.betas()), std::get<1>(o.betas()),
          o.eps(), o.weight_decay(),       o.amsgrad() ? 1.0 : 0.0};
}
template <typename Options>
void set_adam_hyper(Options& o, const std::vector<double>& v) {
  o.lr(v[0]).betas({v[1], v[2]}).eps(v[3]).weight_decay(v[4]).amsgrad(v[5] != 0);
}
template <typename State>
std::vector<at::Tensor> adam_slots(const State& s) {
  return {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()};
}
template <typename State>
void set_adam_slots(State& s, const std::vector<at::Tensor>& t) {
  s.exp_avg(t[0]).exp_avg_sq(t[1]).max_exp_avg_sq(t[2]);
}

Kind sgd_kind() {
  using namespace ::torch::optim;
  return make_kind<SGDOptions, SGDParamState>(
      "sgd", 5, 1,
      [](const SGDOptions& o) {
        return std::vector<double>{o.lr(), o.momentum(), o.dampening(), o.weight_decay(),
                                   o.nesterov() ? 1.0 : 0.0};
      },
      [](SGDOptions& o, const std::vector<double>& v) {
        o.lr(v[0]).momentum(v[1]).dampening(v[2]).weight_decay(v[3]).nesterov(v[4] != 0);
      },
      [](const SGDParamState& s) { return std::vector<at::Tensor>{s.momentum_buffer()}; },
      [](SGDParamState& s, const std::vector<at::Tensor>& t) { s.momentum_buffer(t[0]); });
}

Kind adagrad_kind() {
  using namespace ::torch::optim;
  return make_kind<AdagradOptions, AdagradParamState>(
      "adagrad", 5, 1,
      [](const AdagradOptions& o) {
        return std::vector<double>{o.lr(), o.lr_decay(), o.weight_decay(),
                                   o.initial_accumulator_value(), o.eps()};
      },
      [](AdagradOptions& o, const std::vector<double>& v) {
        o.lr(v[0]).lr_decay(v[1]).weight_decay(v[2]).initial_accumulator_value(v[3]).eps(v[4]);
      },
      [](const AdagradParamState& s) { return std::vector<at::Tensor>{s.sum()}; },
      [](AdagradParamState& s, const std::vector<at::Tensor>& t) { s.sum(t[0]); });
}

Kind rmsprop_kind() {
  using namespace ::torch::optim;
  return make_kind<RMSpropOptions, RMSpropParamState>(
      "rmsprop", 6, 3,
      [](const RMSpropOptions& o) {
        return std::vector<double>{o.lr(),           o.alpha(),    o.eps(),
                                   o.weight_decay(), o.momentum(), o.centered() ? 1.0 : 0.0};
      },
      [](RMSpropOptions& o, const std::vector<double>& v) {
        o.lr(v[0]).alpha(v[1]).eps(v[2]).weight_decay(v[3]).momentum(v[4]).centered(v[5] != 0);
      },
      [](const RMSpropParamState& s) {
        return std::vector<at::Tensor>{s.square_avg(), s.momentum_buffer(), s.grad_avg()};
      },
      [](RMSpropParamState& s, const std::vector<at::Tensor>& t) {
        s.square_avg(t[0]).momentum_buffer(t[1]).grad_avg(t[2]);
      });
}

Kind kind_of(const Optimizer& optimizer) {
  using namespace ::torch::optim;
  if (dynamic_cast<const SGD*>(&optimizer)) return sgd_kind();
  if (dynamic_cast<const Adam*>(&optimizer)) {
    return make_kind<AdamOptions, AdamParamState>("adam", 6, 3, adam_hyper, set_adam_hyper,
                                                  adam_slots, set_adam_slots);
  }
  if (dynamic_cast<const AdamW*>(&optimizer)) {
    return make_kind<AdamWOptions, AdamWParamState>("adamw", 6, 3, adam_hyper, set_adam_hyper,
                                                    adam_slots, set_adam_slots);
  }
  if (dynamic_cast<const Adagrad*>(&optimizer)) return adagrad_kind();
  if (dynamic_cast<const RMSprop*>(&optimizer)) return rmsprop_kind();
  throw InvalidArgument(
      "cohort.torch: this optimizer's state cannot be saved or broadcast (supported: SGD, Adam, "
      "AdamW, Adagrad, RMSprop)");
}

// How torch's optimizers key their state: the parameter's TensorImpl, as a pointer since torch 2.x
// and as its address printed into a string (what c10::guts::to_string gave) in torch 1.x.
using StateKey = std::remove_cvref_t<decltype(std::declval<Optimizer&>().state())>::key_type;

template <typename Key>
Key state_key_as(const at::Tensor& param) {
  if constexpr (std::is_pointer_v<Key>) {
    return param.unsafeGetTensorImpl();
  } else {
    std::ostringstream key;
    key << static_cast<const void*>(param.unsafeGetTensorImpl());
    return key.str();
  }
}

StateKey state_key(const at::Tensor& param) {
  return state_key_as<StateKey>(param);
}

// What parse_optimizer_state builds before it changes anything.
struct ParsedState {
  std::vector<std::vector<double>> hyper;                    // per group
  std::vector<std::unique_ptr<OptimizerParamState>> states;  // per parameter; null: none
};

ParsedState parse(const Kind& kind, Optimizer& optimizer, std::string_view bytes) {
  Reader in(bytes);
  if (in.str() != kMagic) bad_state("not an optimizer state saved by cohort.torch");
  std::string_view saved_kind = in.str();
  if (saved_kind != kind.name) {
    bad_state("the state is of a " + std::string(saved_kind) + " optimizer, this one is " +
              kind.name);
  }
  auto& groups = optimizer.param_groups();
  if (in.u64() != groups.size()) bad_state("different number of param groups");
  ParsedState parsed;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (in.u64() != groups[g].params().size() || in.u64() != kind.num_hyper) {
      bad_state("param group " + std::to_string(g) + " differs (parameters or hyperparameters)");
    }
    auto& hyper = parsed.hyper.emplace_back();
    for (size_t i = 0; i < kind.num_hyper; ++i) hyper.push_back(in.f64());
  }
  size_t index = 0;
  for (auto& group : groups) {
    for (const at::Tensor& param : group.params()) {
      std::string what = "parameter " + std::to_string(index++);
      if (in.u64() == 0) {
        parsed.states.emplace_back();
        continue;
      }
      ParamSlots slots{in.i64(), {}};
      if (in.u64() != kind.num_slots) bad_state(what + ": wrong number of state tensors");
      for (size_t s = 0; s < kind.num_slots; ++s) {
        slots.tensors.push_back(in.tensor(param, what + " state " + std::to_string(s)));
      }
      parsed.states.push_back(kind.make(slots));
    }
  }
  if (!in.done()) bad_state("bytes left over after the state");
  return parsed;
}

// Waits for every Work, then rethrows the first failure: no Work is dropped while it runs.
void wait_all(std::vector<Work>& works) {
  std::exception_ptr first;
  for (Work& w : works) {
    try {
      w.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace

// ---- Optimizer state ----

namespace detail {

std::string optimizer_kind(const Optimizer& optimizer) {
  return kind_of(optimizer).name;
}

std::function<void()> parse_optimizer_state(Optimizer& optimizer, std::string_view bytes) {
  Kind kind = kind_of(optimizer);
  auto parsed = std::make_shared<ParsedState>(parse(kind, optimizer, bytes));
  return [&optimizer, kind, parsed] {
    auto& groups = optimizer.param_groups();
    size_t index = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      kind.set_hyper(groups[g].options(), parsed->hyper[g]);
      for (const at::Tensor& param : groups[g].params()) {
        std::unique_ptr<OptimizerParamState>& state = parsed->states[index++];
        if (state) {
          optimizer.state()[state_key(param)] = std::move(state);
        } else {
          optimizer.state().erase(state_key(param));
        }
      }
    }
  };
}

}  // namespace detail

std::string save_optimizer_state(Optimizer& optimizer) {
  Kind kind = kind_of(optimizer);
  Writer out;
  out.str(kMagic);
  out.str(kind.name);
  out.u64(optimizer.param_groups().size());
  for (const auto& group : optimizer.param_groups()) {
    out.u64(group.params().size());
    std::vector<double> hyper = kind.get_hyper(group.options());
    out.u64(hyper.size());
    for (double v : hyper) out.f64(v);
  }
  for (const auto& group : optimizer.param_groups()) {
    for (const at::Tensor& param : group.params()) {
      auto it = optimizer.state().find(state_key(param));
      out.u64(it != optimizer.state().end() ? 1 : 0);
      if (it == optimizer.state().end()) continue;
      ParamSlots slots = kind.read(*it->second);
      out.i64(slots.step);
      out.u64(slots.tensors.size());
      for (const at::Tensor& t : slots.tensors) out.tensor(t);
    }
  }
  return out.take();
}

void load_optimizer_state(Optimizer& optimizer, std::string_view bytes) {
  detail::parse_optimizer_state(optimizer, bytes)();
}

void broadcast_optimizer_state(Optimizer& optimizer, int root, ProcessSet set) {
  // Every rank refuses an unsupported optimizer before any collective, so none waits for root.
  kind_of(optimizer);
  bool is_root = cohort::rank() == root;
  std::string bytes = is_root ? save_optimizer_state(optimizer) : std::string();
  bytes = broadcast_bytes(std::move(bytes), root, "cohort.torch.optimizer_state", set);
  if (!is_root) load_optimizer_state(optimizer, bytes);
}

// ---- Parameters ----

void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& tensors, int root,
                          ProcessSet set) {
  at::NoGradGuard no_grad;
  std::vector<Work> works;
  for (const auto& item : tensors) {
    if (!item.value().defined()) continue;
    works.push_back(broadcast_async_(item.value(), root, "broadcast." + item.key(), set));
  }
  wait_all(works);
}

void broadcast_parameters(const ::torch::nn::Module& module, int root, ProcessSet set) {
  broadcast_parameters(module.named_parameters(), root, set);
  broadcast_parameters(module.named_buffers(), root, set);
}

}  // namespace cohort::torch
