// The hand-over point between user threads and the background thread: user threads add named
// entries from any thread; the background thread takes the new requests to negotiate and, once a
// response names them, the entries to execute.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "cohort/types.h"
#include "core/handle_state.h"
#include "core/request.h"

namespace cohort {

struct TensorEntry {
  Request request;
  Tensor input;
  Tensor output;
  std::shared_ptr<detail::HandleState> handle;
  // A grouped allreduce's tensors' memory, in order, each reduced in place (their types and shapes
  // are request.group; input and output are then unused).
  std::vector<void*> group;
};

class TensorQueue {
 public:
  // `wake` is called (outside the lock) to rouse the background thread: once per batch of adds,
  // not per add, since a burst of submissions needs the thread woken only once.
  explicit TensorQueue(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Adds an entry and sets its buffer_changed flag. Throws InvalidArgument if its name is already
  // in flight, or the stored error once the queue was closed; in both cases nothing is added.
  void add(TensorEntry entry);

  std::vector<Request> take_new_requests();
  // When the oldest and the newest of the requests not yet taken arrived; nullopt when none.
  struct Arrivals {
    std::chrono::steady_clock::time_point first, last;
    // One new request and nothing else in flight on this rank: no burst to wait for.
    bool alone = false;
  };
  std::optional<Arrivals> new_request_arrivals();
  // Removes and returns the entry for `name`; nullptr-handle entry if this rank never submitted it.
  TensorEntry take(const std::string& name);

  // Fails every entry with `error` and makes later add() calls throw it.
  void close(std::exception_ptr error);

 private:
  // Records where `entry` writes; true when that differs from the last submission of its name.
  bool outputs_moved(const TensorEntry& entry) REQUIRES(mutex_);

  std::function<void()> wake_;
  Mutex mutex_;
  std::unordered_map<std::string, TensorEntry> in_flight_ GUARDED_BY(mutex_);
  // The output memory each name used last time (each tensor of a group), to tell the backend
  // when it changes.
  std::unordered_map<std::string, std::vector<void*>> last_outputs_ GUARDED_BY(mutex_);
  std::vector<Request> new_requests_ GUARDED_BY(mutex_);
  Arrivals arrivals_ GUARDED_BY(mutex_);  // of new_requests_, when not empty
  std::exception_ptr closed_ GUARDED_BY(mutex_);
  // Set by the add that wakes the thread, cleared when the thread takes the new requests.
  bool wake_pending_ GUARDED_BY(mutex_) = false;
};

}  // namespace cohort
