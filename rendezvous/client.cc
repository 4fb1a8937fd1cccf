#include "rendezvous/client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "base/framed_socket.h"
#include "base/wire.h"
#include "rendezvous/frame_io.h"
#include "rendezvous/hmac.h"

namespace cohort::rendezvous {

RendezvousClient::RendezvousClient(std::string host, int port, std::string secret,
                                   std::chrono::milliseconds timeout, std::string scope,
                                   std::chrono::seconds clock_skew)
    : host_(std::move(host)),
      port_(port),
      secret_(std::move(secret)),
      timeout_(timeout),
      scope_(std::move(scope)),
      skew_ms_(std::chrono::milliseconds(clock_skew).count()) {}

namespace {

using std::chrono::milliseconds;

// The pause before sending a failed request again: short at first (a server that refused one
// connection under load usually takes the next), never more than a second.
milliseconds retry_pause(int attempt) {
  return milliseconds(std::min(1000, 20 << std::min(attempt, 6)));
}

}  // namespace

RendezvousResponse RendezvousClient::exchange(const RendezvousRequest& request,
                                              std::chrono::milliseconds wait,
                                              const Cancellation* cancel) {
  auto deadline = Clock::now() + timeout_ + wait;
  if (!fd_.valid()) fd_ = net::connect_tcp(host_, port_, Clock::now() + timeout_);
  // Shutting the socket down wakes the read below; the descriptor stays ours to close.
  CancelHook hook(cancel, [fd = fd_.get()](const std::string&) { ::shutdown(fd, SHUT_RDWR); });
  std::string header_nonce = random_bytes(kNonceSize);
  write_signed_frame(fd_.get(), secret_, seal_request(secret_, request), deadline,
                     request.timestamp_ms, header_nonce);
  RendezvousResponse response =
      open_response(secret_, net::read_frame(fd_.get(), kMaxRendezvousFrame, deadline));
  if (response.status == RendezvousStatus::kStale &&
      constant_time_equal(response.nonce, header_nonce)) {
    throw ClockSkewRefused(response.value);
  }
  if (!constant_time_equal(response.nonce, request.nonce)) {
    throw RendezvousRejected("response does not answer this request (nonce differs)");
  }
  return response;
}

RendezvousResponse RendezvousClient::call(RendezvousRequest request, std::chrono::milliseconds wait,
                                          const Cancellation* cancel) {
  MutexLock lock(mutex_);
  std::string where = "rendezvous server " + address();
  request.scope = scope_;
  auto give_up = Clock::now() + timeout_ + wait;
  RendezvousResponse response;
  for (int attempt = 0;; ++attempt) {
    throw_if_cancelled(cancel);
    // A fresh nonce and time per attempt: the server refuses a replayed one.
    request.nonce = random_bytes(kNonceSize);
    request.timestamp_ms = unix_millis() + skew_ms_;
    auto left = std::chrono::duration_cast<milliseconds>(give_up - Clock::now());
    request.timeout_ms = std::min<int64_t>(request.timeout_ms, std::max<int64_t>(left.count(), 0));
    try {
      response = exchange(request, milliseconds(request.timeout_ms), cancel);
      break;
    } catch (const ClockSkewRefused& e) {
      fd_.reset();  // the server closes it; sending again would be refused alike
      throw ClockSkewRefused(where + " " + e.what() +
                             ": this host's clock differs from cohortrun's by that much; set "
                             "them right (NTP)");
    } catch (const RendezvousRejected& e) {
      fd_.reset();
      throw Error(where + " sent an unauthentic response: " + e.what());
    } catch (const wire::MalformedBytes& e) {
      fd_.reset();  // authentic but malformed: a fault of the server's, not an outage
      throw Error(where + " sent a malformed response: " + e.what());
    } catch (const Error& e) {
      fd_.reset();  // the connection's state is unknown: the next attempt starts afresh
      throw_if_cancelled(cancel);
      if (Clock::now() + retry_pause(attempt) >= give_up) {
        throw StoreUnreachable(where + ": " + e.what() + " (key '" + request.key + "', " +
                               std::to_string(attempt + 1) +
                               (attempt == 0 ? " attempt)" : " attempts)"));
      }
    }
    pollfd cancelled{cancel_fd(cancel), POLLIN, 0};
    ::poll(&cancelled, 1, static_cast<int>(retry_pause(attempt).count()));
  }
  if (response.status == RendezvousStatus::kTimeout) {
    throw RendezvousTimeout(where + ": " + response.value);
  }
  if (response.status == RendezvousStatus::kStopping) throw Error(where + ": " + response.value);
  return response;  // kOk, or kMismatch for the caller to read
}

void RendezvousClient::set(const std::string& key, const std::string& value,
                           const Cancellation* cancel) {
  call({.op = RendezvousOp::kSet, .key = key, .value = value}, {}, cancel);
}

std::string RendezvousClient::get(const std::string& key, std::chrono::milliseconds wait,
                                  const Cancellation* cancel) {
  return call({.op = RendezvousOp::kGet, .key = key, .timeout_ms = wait.count()}, wait, cancel)
      .value;
}

std::optional<std::string> RendezvousClient::lookup(const std::string& key,
                                                    const Cancellation* cancel) {
  try {
    return get(key, std::chrono::milliseconds(0), cancel);
  } catch (const RendezvousTimeout&) {
    return std::nullopt;
  }
}

bool RendezvousClient::compare_and_set(const std::string& key,
                                       const std::optional<std::string>& expected,
                                       const std::string& desired, const Cancellation* cancel) {
  RendezvousRequest request{
      .op = RendezvousOp::kCompareSet, .key = key, .value = desired, .expected = expected};
  return call(std::move(request), {}, cancel).status == RendezvousStatus::kOk;
}

bool RendezvousClient::remove(const std::string& key, const Cancellation* cancel) {
  return call({.op = RendezvousOp::kRemove, .key = key}, {}, cancel).status ==
         RendezvousStatus::kOk;
}

}  // namespace cohort::rendezvous
