// A client of etcd's v3 API through its JSON gateway (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
// /v3/kv/deleterange, /v3/lease/..., /v3/watch), over HTTP or HTTPS with libcurl.
//
// Why the JSON gateway and not gRPC: every etcd since 3.4 serves it on the client port, libcurl
// and nlohmann-json are small Debian packages, and the requests Cohort needs are a handful; gRPC
// would need etcd's .proto files (not packaged) and a code generator in the build.
//
// Every request is bounded: by the client's timeout, or for a watch by the caller's deadline, and
// a Cancellation, or the client's interrupt descriptor, ends it at once (curl_multi_poll waits on
// their descriptors beside the sockets: nothing polls). Keys and values travel base64-encoded, as
// the gateway wants them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancellation.h"
#include "cohort/errors.h"

namespace cohort::rendezvous {

// etcd answered that the lease a request named does not exist (HTTP 404, "requested lease not
// found"): it expired or was revoked. etcd itself answered, so this is no outage.
class EtcdLeaseNotFound : public Error {
 public:
  using Error::Error;
};

// A request ended, unanswered, because the client's interrupt descriptor was readable
// (EtcdOptions::interrupt_fd: for an agent, a signal that stops it arrived). Whether etcd applied
// it is not known.
class EtcdInterrupted : public Error {
 public:
  using Error::Error;
};

struct EtcdOptions {
  // "http://host:port" or "https://host:port"; tried in order until one answers.
  std::vector<std::string> endpoints;
  // For https: the CA that signed the servers' certificates (empty: the system's), and this
  // client's certificate and key where etcd asks for one.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // Bounds each request (connecting included).
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
  // Not -1: while this descriptor is readable, every request of the client ends at once with
  // EtcdInterrupted, and none is sent (an agent's launcher/stop_interrupt.h). Polled beside the
  // request's sockets, on the thread that makes the request; the caller keeps it open.
  int interrupt_fd = -1;
};

class EtcdClient {
 public:
  using Clock = std::chrono::steady_clock;
  // Called with each message of a streamed answer; returns true when it has what it waited for.
  using OnMessage = std::function<bool(const nlohmann::json& message)>;

  // Throws InvalidArgument for no endpoint, a bad one, or a TLS file check_tls_files() refuses.
  explicit EtcdClient(EtcdOptions options);

  // POSTs `body` to `path` and returns etcd's answer. Throws StoreUnreachable naming the path
  // and every endpoint tried when none answers in time, cohort::Error when etcd answers with an
  // error (for a lease it does not know: EtcdLeaseNotFound), InternalError with the reason once
  // `cancel` fires, and EtcdInterrupted once the interrupt descriptor is readable.
  nlohmann::json call(const std::string& path, const nlohmann::json& body,
                      const Cancellation* cancel = nullptr) const;

  // POSTs `messages` (one after the other, as one body) to a streaming `path` (/v3/watch: one
  // create request per watch, all answered on the one stream) and hands each message of the
  // answer to `on_message` until it returns true (then true), or until `deadline` (then false).
  // Errors as call().
  bool stream(const std::string& path, const std::vector<nlohmann::json>& messages,
              Clock::time_point deadline, const Cancellation* cancel,
              const OnMessage& on_message) const;

  // "etcd at http://127.0.0.1:2379, http://127.0.0.1:2381", for messages.
  std::string describe() const;

 private:
  // Tries the endpoints in order, round after round, until one answers or `deadline`; returns its
  // answer (a stream's: nothing).
  std::string post(const std::string& path, const std::string& body, Clock::time_point deadline,
                   const Cancellation* cancel, const OnMessage* on_message, bool& satisfied) const;
  // One try at `endpoint`: its answer, or nothing (why noted in failures[endpoint]) when it
  // cannot answer now (unreachable, no leader). Throws on an answer that is an error.
  std::optional<std::string> post_once(const std::string& endpoint, const std::string& path,
                                       const std::string& body, Clock::time_point deadline,
                                       const Cancellation* cancel, const OnMessage* on_message,
                                       bool& satisfied,
                                       std::map<std::string, std::string>& failures) const;

  // Throws EtcdInterrupted about `path` while the interrupt descriptor is readable.
  void throw_if_interrupted(const std::string& path) const;
  EtcdInterrupted interrupted(const std::string& path) const;

  // Between two rounds over the endpoints.
  static constexpr std::chrono::milliseconds kRetryPause{100};

  EtcdOptions options_;
};

// Throws InvalidArgument, naming the endpoint and what is wrong with it, unless `endpoint` is
// http://HOST[:PORT] or https://HOST[:PORT]: HOST a name or an IPv4 address (no IPv6), PORT 1 to
// 65535 (default the scheme's), nothing after it (no path, user or query).
void check_etcd_endpoint(std::string_view endpoint);
// The most a TLS file (a CA bundle, a certificate, a key) may hold: Debian's whole CA bundle is
// about 210 KiB.
constexpr size_t kMaxTlsFileBytes = size_t{4} << 20;
// Throws InvalidArgument naming the file unless each TLS file given is a regular file of at most
// kMaxTlsFileBytes that can be read (base/read_file.h): checked once, when a client is made, so
// that a FIFO, /dev/zero or a missing file there is an error at once. libcurl reads the files
// again for each connection, so renewed certificates are taken up.
void check_tls_files(const EtcdOptions& options);
// The endpoints of a comma-separated list ("http://a:2379,http://b:2379"), each checked.
std::vector<std::string> parse_etcd_endpoints(std::string_view list);

// An integer field of an etcd answer: the JSON gateway writes int64 fields as strings and leaves
// out fields that are zero.
int64_t json_integer(const nlohmann::json& object, const char* field);

// Whether an etcd answer means "not now" rather than "no": a member without a leader, a leader
// change, a request that timed out, or an overloaded server (HTTP 503, 504, 429; gRPC
// UNAVAILABLE 14, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8). Such answers are waited out as
// outages (StoreUnreachable); any other error answer is a refusal and surfaces at once. 0: absent.
bool etcd_outage(int64_t http_status, int64_t grpc_code);

std::string base64(std::string_view bytes);
// Throws InvalidArgument on text that is not base64.
std::string unbase64(std::string_view text);

}  // namespace cohort::rendezvous
