// What the elastic example trainers (elastic_mlp.cc, torch/digits_cnn.cc) share besides their
// models: counting how many times each sample was trained per epoch (the exactly-once check),
// recording resets and recovery times, and the lines they print. examples/elastic_demo.sh and
// test/examples/CMakeLists.txt wait on and match these lines: change their wording with them.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cohort/cohort.h"
#include "cohort/elastic/run.h"

namespace cohort_examples {

// How many times each sample was trained this epoch, counted from every step's sample ids of all
// workers. The counts belong in the State (track `counts()`): after a reset they are those of the
// committed history, so at each epoch's end every sample must have been trained exactly once.
class TrainedCounts {
 public:
  explicit TrainedCounts(size_t samples) : counts_(samples, 0) {}

  std::vector<int32_t>& counts() { return counts_; }
  int64_t samples() const { return static_cast<int64_t>(counts_.size()); }

  // Every worker's sample ids of one step (the same on every worker).
  void add(std::span<const int64_t> ids) {
    for (int64_t id : ids) ++counts_[id];
  }

  // The epoch's end: returns how many samples were trained exactly once and starts the next
  // epoch's counts.
  int64_t finish_epoch() {
    auto once = static_cast<int64_t>(std::count(counts_.begin(), counts_.end(), 1));
    std::fill(counts_.begin(), counts_.end(), 0);
    every_epoch_once_ = every_epoch_once_ && once == samples();
    return once;
  }

  // Whether every finished epoch trained every sample exactly once.
  bool every_epoch_once() const { return every_epoch_once_; }

 private:
  std::vector<int32_t> counts_;
  bool every_epoch_once_ = true;
};

// A trainer's resets, its recovery times, and its output lines ("<program>: ..."). Reads the
// trainer's epoch and step counters, which must outlive it.
class Progress {
 public:
  // How the summary words two cases (the examples differ, and their tests match the words).
  struct Words {
    std::string no_recoveries;  // after "recovery times (s):" when there was no reset
    std::string not_once;       // the exactly-once answer when some epoch missed a sample
  };

  Progress(std::string program, const int64_t& epoch, const int64_t& step, Words words)
      : program_(std::move(program)), epoch_(epoch), step_(step), words_(std::move(words)) {}

  // From the State's reset callback: the new world exists (the teardown, the wait for the
  // launcher's assignment and the new connections are behind us); the sync and the first step
  // are still to come.
  void on_reset() {
    auto t = cohort::elastic::last_reset_timings();
    reset_cost_ = std::chrono::duration<double>(t.teardown + t.assignment + t.connect).count();
    reset_started_ = Clock::now();
    recovering_ = true;
    ++resets_;
    event("reset into round " + std::to_string(t.round));
  }

  // After a step (or an epoch's end): the first call after a reset records the recovery time,
  // from the failure (or interrupt) being caught to now; other calls do nothing.
  void note_recovery() {
    if (!recovering_) return;
    recovering_ = false;
    double since_callback = std::chrono::duration<double>(Clock::now() - reset_started_).count();
    recoveries_.push_back(reset_cost_ + since_callback);
  }

  // A line any worker prints about itself ("training", a reset): the demo finds pids in them.
  void event(const std::string& what) const {
    std::ostringstream line;
    const char* host = std::getenv("COHORT_HOSTNAME");
    line << what << ": rank " << cohort::rank() << " of " << cohort::size() << ", epoch " << epoch_
         << ", step " << step_ << ", resets " << resets_ << ", host " << (host ? host : "localhost")
         << ", pid " << ::getpid();
    print(line.str());
  }

  // Rank 0's progress line every few steps: the demo waits on its world size.
  void step_done(double mean_loss) const {
    if (cohort::rank() != 0) return;
    std::ostringstream line;
    line << std::fixed << std::setprecision(4) << "epoch " << epoch_ << " step " << step_
         << ": loss " << mean_loss << ", world size " << cohort::size();
    print(line.str());
  }

  // Rank 0's line at an epoch's end; `lr` where the learning rate follows the world size.
  void epoch_done(double mean_loss, double accuracy, int64_t once, int64_t samples,
                  std::optional<double> lr = std::nullopt) const {
    if (cohort::rank() != 0) return;
    std::ostringstream line;
    line << std::fixed << std::setprecision(4) << "epoch " << epoch_ << " done: loss " << mean_loss
         << ", accuracy " << accuracy << ", " << once << "/" << samples
         << " samples trained exactly once, ";
    if (lr) line << "lr " << *lr << ", ";
    line << "world size " << cohort::size();
    print(line.str());
  }

  // The last line: the tests match it whole.
  void summary(double held_out_accuracy, bool every_epoch_once) const {
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "summary: " << epoch_ << " epochs, world size "
         << cohort::size() << ", resets seen by this worker " << resets_ << ", recovery times (s):";
    for (double r : recoveries_) line << " " << r;
    if (recoveries_.empty()) line << words_.no_recoveries;
    line << "; held-out accuracy " << held_out_accuracy
         << "; every sample of every epoch trained exactly once: "
         << (every_epoch_once ? "yes" : words_.not_once);
    print(line.str());
  }

  void print(const std::string& line) const { std::cout << program_ << ": " << line << std::endl; }

 private:
  using Clock = std::chrono::steady_clock;

  std::string program_;
  const int64_t& epoch_;
  const int64_t& step_;
  Words words_;
  int resets_ = 0;
  bool recovering_ = false;  // reset, and no step or epoch end since
  Clock::time_point reset_started_;
  double reset_cost_ = 0;  // the reset's part before the callback
  std::vector<double> recoveries_;
};

}  // namespace cohort_examples
