// The main job's training program: a small convolutional network, written with libtorch, that
// learns scikit-learn's handwritten digits (8x8 images, 10 classes) under cohortrun's elastic
// mode, through Cohort's torch adapter: DistributedOptimizer averages the gradients, TorchState
// keeps what survives a failure, the elastic sampler hands out each epoch's samples. Run it with
// examples/elastic_demo.sh and it keeps training while workers come, go and die.
//
// The State holds the model, the optimizer (momentum buffers, learning rate), the epoch, the
// sampler, and per epoch how many times each sample was trained (from an allgather of every
// step's sample ids), so at each epoch's end the program can say that every sample was trained
// exactly once in the committed history. At the end rank 0 prints the accuracy on a held-out
// fifth of the data, never trained on.
//
//   cohortrun --host-discovery-script ./hosts.sh --min-np 2 digits_cnn --epochs 14
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"
#include "cohort/elastic/sampler.h"
#include "cohort/torch/collectives.h"
#include "cohort/torch/optimizer.h"
#include "cohort/torch/state.h"
#include "elastic_progress.h"

namespace {

struct Options {
  int epochs = 14;
  int batch = 32;               // per worker
  double learning_rate = 0.02;  // per worker: the optimizer's is this times the world size
  double momentum = 0.9;
  int commit_every = 4;
  int step_delay_ms = 0;  // slows training down so a demo can act while it runs
  std::string data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    std::string value = argv[i + 1];
    if (flag == "--epochs")
      o.epochs = std::stoi(value);
    else if (flag == "--batch")
      o.batch = std::stoi(value);
    else if (flag == "--lr")
      o.learning_rate = std::stod(value);
    else if (flag == "--commit-every")
      o.commit_every = std::stoi(value);
    else if (flag == "--step-delay-ms")
      o.step_delay_ms = std::stoi(value);
    else if (flag == "--data")
      o.data = value;
    else
      throw std::invalid_argument("unknown flag " + flag + " (see the top of digits_cnn.cc)");
  }
  return o;
}

// Images as [n, 1, 8, 8] floats, labels as [n] int64.
struct Digits {
  at::Tensor x, y;
  int64_t size() const { return y.size(0); }
};

// The rows of the gzipped CSV: 64 pixel values (0..16), then the label.
std::vector<std::vector<float>> read_rows(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path);
  std::vector<std::vector<float>> rows;
  char line[4096];
  while (gzgets(file, line, sizeof line) != nullptr) {
    std::vector<float> row;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) row.push_back(std::stof(cell));
    if (row.size() != 65) {
      gzclose(file);
      throw std::runtime_error(path + ": a row without 64 pixels and a label");
    }
    rows.push_back(std::move(row));
  }
  gzclose(file);
  return rows;
}

// Rows whose index satisfies `keep`, as tensors; pixels scaled to [0, 1].
Digits select(const std::vector<std::vector<float>>& rows, bool (*keep)(size_t)) {
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!keep(i)) continue;
    for (int p = 0; p < 64; ++p) pixels.push_back(rows[i][p] / 16.0f);
    labels.push_back(static_cast<int64_t>(rows[i][64]));
  }
  auto n = static_cast<int64_t>(labels.size());
  return {torch::tensor(pixels).reshape({n, 1, 8, 8}), torch::tensor(labels)};
}

// Every fifth row (index % 5 == 0) is held out: deterministic, the same in train_digits.py, and
// balanced over the classes (the file cycles through them). Both parts are standardized with the
// training part's mean and standard deviation.
std::pair<Digits, Digits> load_digits(const std::string& path) {
  auto rows = read_rows(path);
  Digits train = select(rows, [](size_t i) { return i % 5 != 0; });
  Digits test = select(rows, [](size_t i) { return i % 5 == 0; });
  at::Tensor mean = train.x.mean(), std = train.x.std();
  train.x = (train.x - mean) / std;
  test.x = (test.x - mean) / std;
  return {train, test};
}

// conv 1->16 (3x3), ReLU, conv 16->32 (3x3), ReLU, max-pool 2 -> 32x4x4, linear 512->64, ReLU,
// linear 64->10 (logits).
struct CnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 16, 3).padding(1)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(16, 32, 3).padding(1)};
  torch::nn::Linear fc1{512, 64};
  torch::nn::Linear fc2{64, 10};

  CnnImpl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  at::Tensor forward(at::Tensor x) {
    x = torch::relu(conv1(x));
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = torch::relu(fc1(x.flatten(1)));
    return fc2(x);
  }
};
TORCH_MODULE(Cnn);

struct StepStats {
  double loss = 0, correct = 0, count = 0;
  double mean_loss() const { return loss / std::max(count, 1.0); }
  double accuracy() const { return correct / std::max(count, 1.0); }
};

// The model as every rank builds it: the same seed, so the first sync changes nothing.
Cnn make_model() {
  torch::manual_seed(7);
  return Cnn();
}

class Trainer {
 public:
  Trainer(Options o, Digits train, Digits test)
      : o_(std::move(o)),
        train_(std::move(train)),
        test_(std::move(test)),
        model_(make_model()),
        sgd_(std::make_shared<torch::optim::SGD>(
            model_->parameters(),
            torch::optim::SGDOptions(o_.learning_rate * cohort::size()).momentum(o_.momentum))),
        optimizer_(sgd_, model_->named_parameters()),
        sampler_(static_cast<uint64_t>(train_.size()), /*seed=*/42),
        trained_(train_.size()),
        state_(model_.ptr(), sgd_, "digits") {
    state_.track("epoch", epoch_);
    state_.track("step", step_);
    state_.track("trained", trained_.counts());
    state_.track("epoch_totals", epoch_totals_);
    state_.track("sampler", sampler_);
    state_.add_reset_callback([this] { on_reset(); });
  }

  void run() {
    cohort::elastic::run(state_, [this](cohort::elastic::State& s) { train(s); });
    if (cohort::rank() == 0) summary();
  }

 private:
  static constexpr int kProgressEvery = 10;

  void train(cohort::elastic::State& s) {
    progress_.event("training");
    for (; epoch_ < o_.epochs; sampler_.set_epoch(++epoch_), s.commit()) {
      for (const auto& batch : sampler_.batches(o_.batch)) {
        StepStats stats = step(batch);
        add_to_epoch(stats);
        if (++step_ % o_.commit_every == 0) s.commit();
        if (step_ % kProgressEvery == 0) progress_.step_done(stats.mean_loss());
      }
      s.commit();
      finish_epoch();
    }
  }

  // One step over every worker's batch; returns the global loss sum, correct count and count.
  StepStats step(const std::vector<uint64_t>& batch) {
    at::Tensor ids = torch::tensor(std::vector<int64_t>(batch.begin(), batch.end()), torch::kLong);
    at::Tensor local = torch::zeros({3}, torch::kDouble);
    optimizer_.zero_grad();
    // An empty batch (a rank with less left near an epoch's end) computes no gradient: the
    // optimizer then contributes zeros for it, so the other ranks are not kept waiting.
    if (!batch.empty()) local = forward_backward(ids);
    optimizer_.step();  // one grouped allreduce of every gradient, then the SGD update
    auto totals =
        cohort::torch::allreduce_async(local, {.op = cohort::ReduceOp::kSum}, "digits.stats");
    auto all_ids = cohort::torch::allgather_async(ids, "digits.sample_ids");
    count_trained(all_ids.wait());
    sampler_.record(batch);
    progress_.note_recovery();
    if (o_.step_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(o_.step_delay_ms));
    at::Tensor t = totals.wait();
    return {t[0].item<double>(), t[1].item<double>(), t[2].item<double>()};
  }

  // This rank's loss and gradients; returns its loss sum, correct count and count.
  at::Tensor forward_backward(const at::Tensor& ids) {
    at::Tensor x = train_.x.index_select(0, ids), y = train_.y.index_select(0, ids);
    at::Tensor logits = model_->forward(x);
    at::Tensor loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();
    double n = static_cast<double>(ids.size(0));
    double correct = logits.argmax(1).eq(y).sum().item<double>();
    return torch::tensor({loss.item<double>() * n, correct, n}, torch::kDouble);
  }

  // Every worker's sample ids of this step, counted into `trained_` on every worker.
  void count_trained(const at::Tensor& all_ids) {
    trained_.add({all_ids.data_ptr<int64_t>(), static_cast<size_t>(all_ids.numel())});
  }

  // The epoch's loss sum, correct count and count, kept in the State: an epoch interrupted by a
  // reset reports the steps committed before it too.
  void add_to_epoch(const StepStats& s) {
    epoch_totals_[0] += s.loss;
    epoch_totals_[1] += s.correct;
    epoch_totals_[2] += s.count;
  }

  void finish_epoch() {
    // A world that resumes at an epoch's end has no step to take: its first commit is its
    // recovery.
    progress_.note_recovery();
    StepStats stats{epoch_totals_[0], epoch_totals_[1], epoch_totals_[2]};
    std::fill(epoch_totals_.begin(), epoch_totals_.end(), 0.0);
    int64_t once = trained_.finish_epoch();
    progress_.epoch_done(stats.mean_loss(), stats.accuracy(), once, trained_.samples(), sgd_lr());
  }

  double sgd_lr() { return sgd_->param_groups().front().options().get_lr(); }

  // Horovod's rule: the learning rate grows with the world (the global batch grows with it).
  void scale_learning_rate() {
    for (auto& group : sgd_->param_groups())
      group.options().set_lr(o_.learning_rate * cohort::size());
  }

  // Runs once the new world exists (after the restore, before the sync).
  void on_reset() {
    scale_learning_rate();
    progress_.on_reset();
  }

  // Accuracy on the held-out images (rank 0 alone: the model is the same everywhere).
  double held_out_accuracy() {
    torch::NoGradGuard no_grad;
    at::Tensor predicted = model_->forward(test_.x).argmax(1);
    return predicted.eq(test_.y).to(torch::kDouble).mean().item<double>();
  }

  void summary() {
    double accuracy = held_out_accuracy();
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "held-out accuracy " << accuracy << " ("
         << test_.size() << " images never trained on)";
    progress_.print(line.str());
    progress_.summary(accuracy, trained_.every_epoch_once());
  }

  Options o_;
  Digits train_;
  Digits test_;  // never trained on: the accuracy printed at the end
  Cnn model_;
  std::shared_ptr<torch::optim::SGD> sgd_;
  cohort::torch::DistributedOptimizer optimizer_;
  cohort::elastic::ElasticSampler sampler_;
  cohort_examples::TrainedCounts trained_;  // this epoch: how many times each sample was trained
  std::vector<double> epoch_totals_ = std::vector<double>(3, 0.0);  // this epoch: see add_to_epoch
  int64_t epoch_ = 0;
  int64_t step_ = 0;
  cohort_examples::Progress progress_{
      "digits_cnn", epoch_, step_, {.no_recoveries = " none", .not_once = "no"}};
  cohort::torch::TorchState state_;  // declared last: it refers to the values above
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = parse(argc, argv);
    // Several workers share few cores: one thread each, or they fight over them.
    torch::set_num_threads(1);
    auto [train, test] = load_digits(options.data);
    cohort::init();
    Trainer trainer(options, std::move(train), std::move(test));
    trainer.run();
    cohort::shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "digits_cnn: " << e.what() << std::endl;
    return 1;
  }
}
