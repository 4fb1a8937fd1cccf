#include "core/tensor_queue.h"

#include <utility>

#include "cohort/errors.h"

namespace cohort {

bool TensorQueue::outputs_moved(const TensorEntry& entry) {
  std::vector<void*>& last = last_outputs_[entry.request.name];
  size_t n = entry.group.empty() ? 1 : entry.group.size();
  bool moved = last.size() != n;
  last.resize(n);
  for (size_t i = 0; i < n; ++i) {
    void* output = entry.group.empty() ? entry.output.data : entry.group[i];
    moved = moved || last[i] != output;
    last[i] = output;
  }
  return moved;
}

void TensorQueue::add(TensorEntry entry) {
  bool wake;
  {
    MutexLock lock(mutex_);
    if (closed_) std::rethrow_exception(closed_);
    const std::string& name = entry.request.name;
    if (in_flight_.contains(name)) {
      throw InvalidArgument("a collective named '" + name +
                            "' is already in flight on this rank; wait for it before reusing "
                            "the name");
    }
    auto now = std::chrono::steady_clock::now();
    if (new_requests_.empty()) arrivals_.first = now;
    arrivals_.last = now;
    entry.request.buffer_changed = outputs_moved(entry);
    new_requests_.push_back(entry.request);
    in_flight_.emplace(name, std::move(entry));
    wake = !std::exchange(wake_pending_, true);
  }
  if (wake) wake_();
}

std::vector<Request> TensorQueue::take_new_requests() {
  MutexLock lock(mutex_);
  wake_pending_ = false;  // anything added from now on wakes the thread again
  std::vector<Request> taken = std::move(new_requests_);
  // Room for a burst like the last one: a step's thousand requests then fill the vector without
  // growing it (and moving every request) ten times.
  new_requests_ = {};
  new_requests_.reserve(taken.size());
  return taken;
}

std::optional<TensorQueue::Arrivals> TensorQueue::new_request_arrivals() {
  MutexLock lock(mutex_);
  if (new_requests_.empty()) return std::nullopt;
  Arrivals arrivals = arrivals_;
  arrivals.alone = new_requests_.size() == 1 && in_flight_.size() == 1;
  return arrivals;
}

TensorEntry TensorQueue::take(const std::string& name) {
  MutexLock lock(mutex_);
  auto it = in_flight_.find(name);
  if (it == in_flight_.end()) return {};
  TensorEntry entry = std::move(it->second);
  in_flight_.erase(it);
  return entry;
}

void TensorQueue::close(std::exception_ptr error) {
  std::unordered_map<std::string, TensorEntry> failed;
  {
    MutexLock lock(mutex_);
    if (!closed_) closed_ = error;
    failed.swap(in_flight_);
    new_requests_.clear();
  }
  for (auto& [name, entry] : failed) entry.handle->complete(error);
}

}  // namespace cohort
