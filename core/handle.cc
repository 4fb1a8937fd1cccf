#include "cohort/handle.h"

#include "cohort/errors.h"
#include "core/handle_state.h"

namespace cohort {
namespace {

const detail::HandleState& checked(const std::shared_ptr<detail::HandleState>& state) {
  if (!state) throw InvalidArgument("operation on an empty cohort::Handle");
  return *state;
}

}  // namespace

Handle::Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

const std::string& Handle::name() const {
  return checked(state_).name;
}

bool Handle::poll() const {
  checked(state_);
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void Handle::wait() const {
  checked(state_);
  std::unique_lock lock(state_->mutex);
  state_->cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Handle::wait_for(std::chrono::milliseconds timeout) const {
  checked(state_);
  std::unique_lock lock(state_->mutex);
  if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) return false;
  if (state_->error) std::rethrow_exception(state_->error);
  return true;
}

const OwnedTensor& Handle::output() const {
  wait();
  return state_->output;
}

}  // namespace cohort
