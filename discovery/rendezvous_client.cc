#include "discovery/rendezvous_client.h"

#include "discovery/frame_io.h"
#include "discovery/hmac.h"

namespace cohort::discovery {

RendezvousClient::RendezvousClient(std::string host, int port, std::string secret,
                                   std::chrono::milliseconds timeout, std::string scope)
    : host_(std::move(host)),
      port_(port),
      secret_(std::move(secret)),
      timeout_(timeout),
      scope_(std::move(scope)) {}

RendezvousResponse RendezvousClient::exchange(const RendezvousRequest& request,
                                              std::chrono::milliseconds wait) {
  auto deadline = Clock::now() + timeout_ + wait;
  if (!fd_.valid()) fd_ = connect_tcp(host_, port_, Clock::now() + timeout_);
  write_frame(fd_.get(), seal_request(secret_, request), deadline);
  RendezvousResponse response =
      open_response(secret_, read_frame(fd_.get(), kMaxRendezvousFrame, deadline));
  if (!constant_time_equal(response.nonce, request.nonce)) {
    throw RendezvousRejected("response does not answer this request (nonce differs)");
  }
  return response;
}

RendezvousResponse RendezvousClient::call(RendezvousRequest request,
                                          std::chrono::milliseconds wait) {
  std::lock_guard lock(mutex_);
  std::string where = "rendezvous server " + address();
  request.nonce = random_bytes(kNonceSize);
  request.timestamp_ms = unix_millis();
  request.scope = scope_;
  RendezvousResponse response;
  try {
    response = exchange(request, wait);
  } catch (const RendezvousRejected& e) {
    fd_.reset();
    throw Error(where + " sent an unauthentic response: " + e.what());
  } catch (const Error& e) {
    fd_.reset();  // the connection's state is unknown: the next call starts afresh
    throw Error(where + ": " + e.what() + " (key '" + request.key + "')");
  }
  if (response.status == RendezvousStatus::kTimeout) {
    throw RendezvousTimeout(where + ": " + response.value);
  }
  if (response.status != RendezvousStatus::kOk) throw Error(where + ": " + response.value);
  return response;
}

void RendezvousClient::set(const std::string& key, const std::string& value) {
  call({.op = RendezvousOp::kSet, .key = key, .value = value}, {});
}

std::string RendezvousClient::get(const std::string& key, std::chrono::milliseconds wait) {
  return call({.op = RendezvousOp::kGet, .key = key, .timeout_ms = wait.count()}, wait).value;
}

void RendezvousStore::set(const std::string& key, const std::vector<char>& data) {
  client_.set(key, std::string(data.begin(), data.end()));
}

std::vector<char> RendezvousStore::get(const std::string& key) {
  std::string value = client_.get(key, timeout_);
  return {value.begin(), value.end()};
}

void RendezvousStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& timeout) {
  // One deadline for all keys: waiting for each in turn with what is left of it.
  auto deadline = Clock::now() + timeout;
  for (const auto& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    client_.get(key, std::max(left, std::chrono::milliseconds(0)));
  }
}

}  // namespace cohort::discovery
