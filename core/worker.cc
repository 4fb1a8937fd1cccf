#include "core/worker.h"

#include <string>
#include <utility>

#include "cohort/errors.h"

namespace cohort {

bool Worker::step(std::vector<ControlMessage> messages, std::vector<Request> fresh, bool shutdown) {
  auto list = next_list(std::move(fresh), shutdown);
  if (!list.empty()) control_.send(upstream_, list);
  for (const auto& message : messages) {
    if (apply(message.payload)) return true;
  }
  return false;
}

std::vector<std::byte> Worker::next_list(std::vector<Request> fresh, bool shutdown) {
  RequestList list;
  list.applied = cache_view_.applied();
  for (auto& request : fresh) cache_view_.add(list, std::move(request));
  if (shutdown && !shutdown_announced_) {
    list.shutdown = true;
    shutdown_announced_ = true;
  }
  if (list.requests.empty() && list.hits.empty() && !list.shutdown) return {};
  return encode(list);
}

bool Worker::apply(std::span<const std::byte> payload) {
  ResponseList list;
  try {
    list = decode_response_list(payload);
  } catch (const InternalError& e) {
    throw InternalError("rank 0 sent a " + std::string(e.what()));
  }
  if (!list.abort_reason.empty()) throw InternalError(list.abort_reason);
  cache_view_.apply(list);
  return executor_.execute(list);
}

}  // namespace cohort
