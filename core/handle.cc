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

namespace detail {

ErrorRecord ErrorRecord::from(const std::exception_ptr& error) {
  using K = Kind;
  try {
    std::rethrow_exception(error);
  } catch (const MismatchError& e) {
    return {K::kMismatch, e.what()};
  } catch (const StallError& e) {
    return {K::kStall, e.what()};
  } catch (const InternalError& e) {
    return {K::kInternal, e.what()};
  } catch (const ShutdownError& e) {
    return {K::kShutdown, e.what()};
  } catch (const InvalidArgument& e) {
    return {K::kInvalidArgument, e.what()};
  } catch (const NotInitialized& e) {
    return {K::kNotInitialized, e.what()};
  } catch (const std::exception& e) {
    return {K::kError, e.what()};
  }
}

void ErrorRecord::raise() const {
  switch (kind) {
    case Kind::kMismatch:
      throw MismatchError(message);
    case Kind::kStall:
      throw StallError(message);
    case Kind::kInternal:
      throw InternalError(message);
    case Kind::kShutdown:
      throw ShutdownError(message);
    case Kind::kInvalidArgument:
      throw InvalidArgument(message);
    case Kind::kNotInitialized:
      throw NotInitialized(message);
    case Kind::kError:
    case Kind::kNone:
      break;
  }
  throw Error(message);
}

}  // namespace detail

Handle::Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

const std::string& Handle::name() const {
  return checked(state_).name;
}

bool Handle::poll() const {
  checked(state_);
  MutexLock lock(state_->mutex);
  return state_->done;
}

void Handle::wait() const {
  checked(state_);
  MutexLock lock(state_->mutex);
  state_->cv.wait(state_->mutex, [&]() REQUIRES(state_->mutex) { return state_->done; });
  if (state_->error.kind != detail::ErrorRecord::Kind::kNone) state_->error.raise();
}

bool Handle::wait_for(std::chrono::milliseconds timeout) const {
  checked(state_);
  MutexLock lock(state_->mutex);
  if (!state_->cv.wait_for(state_->mutex, timeout,
                           [&]() REQUIRES(state_->mutex) { return state_->done; })) {
    return false;
  }
  if (state_->error.kind != detail::ErrorRecord::Kind::kNone) state_->error.raise();
  return true;
}

const OwnedTensor& Handle::output() const {
  wait();
  return state_->output;
}

const std::vector<int64_t>& Handle::received_splits() const {
  wait();
  return state_->received_splits;
}

}  // namespace cohort
