#include "rendezvous/protocol.h"

#include "base/wire.h"
#include "rendezvous/hmac.h"

namespace cohort::rendezvous {
namespace {

std::string to_string(std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string seal(std::string_view secret, std::string body) {
  return body + hmac_sha256(secret, body);
}

// Checks the MAC and returns the body.
std::string_view unseal(std::string_view secret, std::string_view sealed, const char* what) {
  if (sealed.size() < kMacSize) throw RendezvousRejected(std::string(what) + " without a MAC");
  std::string_view body = sealed.substr(0, sealed.size() - kMacSize);
  if (!constant_time_equal(hmac_sha256(secret, body), sealed.substr(body.size()))) {
    throw RendezvousRejected(std::string(what) +
                             " with a wrong MAC (not signed with the job secret)");
  }
  return body;
}

template <typename F>
auto parse(std::string_view body, const char* what, F&& read) {
  return wire::decode<RendezvousRejected>(
      std::span(reinterpret_cast<const std::byte*>(body.data()), body.size()),
      std::string("malformed ") + what, read);
}

}  // namespace

int64_t unix_millis() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::optional<std::string> outside_replay_window(int64_t timestamp_ms) {
  int64_t now = unix_millis();
  // Differences computed in unsigned arithmetic: a hostile timestamp must not overflow.
  uint64_t distance = timestamp_ms > now ? static_cast<uint64_t>(timestamp_ms) - now
                                         : static_cast<uint64_t>(now) - timestamp_ms;
  if (distance <= static_cast<uint64_t>(std::chrono::milliseconds(kReplayWindow).count())) {
    return std::nullopt;
  }
  return "its timestamp is " + std::to_string((distance + 500) / 1000) + " s " +
         (timestamp_ms > now ? "ahead of" : "behind") +
         " the clock of cohortrun's host (requests are accepted within ±" +
         std::to_string(kReplayWindow.count()) + " s)";
}

std::string seal_request(std::string_view secret, const RendezvousRequest& r) {
  wire::Writer w;
  w.u8(kProtocolVersion);
  w.u8(static_cast<uint8_t>(r.op));
  w.str(r.nonce);
  w.i64(r.timestamp_ms);
  w.str(r.scope);
  w.str(r.key);
  w.str(r.value);
  w.u8(r.expected ? 1 : 0);
  w.str(r.expected.value_or(""));
  w.i64(r.timeout_ms);
  return seal(secret, to_string(w.bytes()));
}

namespace {
RendezvousRequest read_request(wire::Reader& rd) {
  RendezvousRequest r;
  if (uint8_t v = rd.u8(); v != kProtocolVersion) {
    throw wire::MalformedBytes("protocol version " + std::to_string(v) + ", expected " +
                               std::to_string(kProtocolVersion));
  }
  uint8_t op = rd.u8();
  if (op < 1 || op > 4) throw wire::MalformedBytes("unknown operation " + std::to_string(op));
  r.op = static_cast<RendezvousOp>(op);
  r.nonce = rd.str();
  if (r.nonce.size() != kNonceSize) throw wire::MalformedBytes("bad nonce size");
  r.timestamp_ms = rd.i64();
  r.scope = rd.str();
  r.key = rd.str();
  if (r.key.size() > kMaxKeySize || r.scope.size() > kMaxKeySize) {
    throw wire::MalformedBytes("key or scope longer than " + std::to_string(kMaxKeySize) +
                               " bytes");
  }
  r.value = rd.str();
  uint8_t has_expected = rd.u8();
  if (has_expected > 1) throw wire::MalformedBytes("bad expected-value flag");
  std::string expected = rd.str();
  if (has_expected) r.expected = std::move(expected);
  r.timeout_ms = rd.i64();
  return r;
}
}  // namespace

RendezvousRequest open_request(std::string_view secret, std::string_view sealed) {
  return parse(unseal(secret, sealed, "request"), "request", read_request);
}

std::string seal_response(std::string_view secret, const RendezvousResponse& r) {
  wire::Writer w;
  w.u8(kProtocolVersion);
  w.str(r.nonce);
  w.u8(static_cast<uint8_t>(r.status));
  w.str(r.value);
  return seal(secret, to_string(w.bytes()));
}

RendezvousResponse open_response(std::string_view secret, std::string_view sealed) {
  return parse(unseal(secret, sealed, "response"), "response", [](wire::Reader& rd) {
    RendezvousResponse r;
    if (rd.u8() != kProtocolVersion) throw wire::MalformedBytes("unknown protocol version");
    r.nonce = rd.str();
    uint8_t status = rd.u8();
    if (status > static_cast<uint8_t>(RendezvousStatus::kStale))
      throw wire::MalformedBytes("unknown status " + std::to_string(status));
    r.status = static_cast<RendezvousStatus>(status);
    r.value = rd.str();
    return r;
  });
}

}  // namespace cohort::rendezvous
