// The rendezvous wire protocol between cohortrun's server and the workers.
//
// A frame (see frame_io.h) holds a body followed by its HMAC-SHA256 under the per-job secret.
// Request bodies carry a protocol version, a random nonce and a timestamp: the server rejects a
// request whose MAC is wrong, whose timestamp is outside the replay window, or whose nonce it has
// already seen. Response bodies repeat the request's nonce, so a client rejects forged or
// replayed responses. Keys live in scopes (the static job uses ""; elastic mode will use one
// scope per round, which the launcher can clear as a whole).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cohort/errors.h"

namespace cohort::rendezvous {

// A request or response that fails authentication or parsing. Nothing was changed.
class RendezvousRejected : public Error {
 public:
  using Error::Error;
};

// A GET whose key was not set before its deadline.
class RendezvousTimeout : public Error {
 public:
  using Error::Error;
};

inline constexpr uint8_t kProtocolVersion = 3;
inline constexpr uint32_t kMaxRendezvousFrame = 1u << 20;
inline constexpr size_t kMaxKeySize = 1024;
inline constexpr size_t kNonceSize = 16;
inline constexpr std::chrono::seconds kReplayWindow{60};

enum class RendezvousOp : uint8_t { kSet = 1, kGet = 2, kCompareSet = 3, kRemove = 4 };
// kMismatch: a compare-and-set whose expected value was not the key's, or a remove of a key that
// was not set; nothing changed. kStale: the connection's first frame header was signed with the
// secret but its timestamp is outside the replay window (the client's clock is off); the answer
// repeats that header's nonce, not a request's, and the server closes the connection.
enum class RendezvousStatus : uint8_t {
  kOk = 0,
  kTimeout = 1,
  kStopping = 2,
  kMismatch = 3,
  kStale = 4
};

// The server refused the request because the client's clock differs from the server's by more
// than kReplayWindow; what() says by how much. Sending again does not help.
class ClockSkewRefused : public Error {
 public:
  using Error::Error;
};

struct RendezvousRequest {
  RendezvousOp op = RendezvousOp::kGet;
  std::string nonce;
  int64_t timestamp_ms = 0;  // milliseconds since the Unix epoch
  std::string scope;
  std::string key;
  std::string value;                    // for kSet and kCompareSet (the desired value)
  std::optional<std::string> expected;  // for kCompareSet: nullopt when the key must be unset
  int64_t timeout_ms = 0;               // for kGet: how long the server may wait for the key
};

struct RendezvousResponse {
  std::string nonce;  // the request's
  RendezvousStatus status = RendezvousStatus::kOk;
  std::string value;  // the value for kGet, or the error text when not kOk
};

int64_t unix_millis();

// Why a header or request stamped `timestamp_ms` is refused as stale, if it is outside
// kReplayWindow of this host's clock: "its timestamp is 75 s ahead of the clock of cohortrun's
// host (...)".
std::optional<std::string> outside_replay_window(int64_t timestamp_ms);

// Body + MAC, without the length prefix.
std::string seal_request(std::string_view secret, const RendezvousRequest& request);
std::string seal_response(std::string_view secret, const RendezvousResponse& response);
// Throw RendezvousRejected if the MAC is wrong or the body is malformed.
RendezvousRequest open_request(std::string_view secret, std::string_view sealed);
RendezvousResponse open_response(std::string_view secret, std::string_view sealed);

}  // namespace cohort::rendezvous
