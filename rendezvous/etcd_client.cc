#include "rendezvous/etcd_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <poll.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "base/deadline.h"
#include "base/decimal.h"
#include "base/host_port.h"
#include "base/read_file.h"
#include "cohort/errors.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {
namespace {

void init_curl_once() {
  static std::once_flag once;  // libcurl's own global state, set up once per process
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// One POST: what goes out, what came back, and for a stream what its messages said.
struct Transfer {
  std::string request;
  std::string response;
  size_t parsed = 0;  // a stream's bytes already handed to on_message
  const EtcdClient::OnMessage* on_message = nullptr;
  bool satisfied = false;
  std::exception_ptr error;
};

// Hands the complete lines of a stream to its callback; returns false to stop the transfer.
bool feed_stream(Transfer& t) {
  for (size_t end; (end = t.response.find('\n', t.parsed)) != std::string::npos;) {
    std::string_view line(t.response.data() + t.parsed, end - t.parsed);
    t.parsed = end + 1;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    try {
      if ((*t.on_message)(nlohmann::json::parse(line))) {
        t.satisfied = true;
        return false;
      }
    } catch (...) {
      t.error = std::current_exception();
      return false;
    }
  }
  return true;
}

size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  t.response.append(data, size * count);
  if (t.on_message && !feed_stream(t)) return 0;  // ends the transfer (CURLE_WRITE_ERROR)
  return size * count;
}

std::unique_ptr<CURL, EasyDeleter> make_request(const EtcdOptions& o, const std::string& url,
                                                Transfer& t, curl_slist* headers) {
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  if (!easy) throw Error("etcd: curl_easy_init failed");
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, t.request.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, static_cast<long>(t.request.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.timeout.count()));
  if (!o.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, o.ca_file.c_str());
  if (!o.cert_file.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, o.cert_file.c_str());
  if (!o.key_file.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, o.key_file.c_str());
  return easy;
}

enum class Ended { kFinished, kSatisfied, kDeadline, kInterrupted };

// Whether `fd` (not -1) is readable now.
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return fd >= 0 && ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

// Runs `easy` until it finishes, the stream is satisfied, `deadline`, or `interrupt_fd` is
// readable; waits in curl_multi_poll beside the cancellation's descriptor and `interrupt_fd`.
Ended run(CURL* easy, Transfer& t, EtcdClient::Clock::time_point deadline,
          const Cancellation* cancel, int interrupt_fd, CURLcode& result) {
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  curl_multi_add_handle(multi.get(), easy);
  curl_waitfd extra[2];
  unsigned extras = 0;
  if (cancel) extra[extras++] = {cancel->fd(), CURL_WAIT_POLLIN, 0};
  if (interrupt_fd >= 0) extra[extras++] = {interrupt_fd, CURL_WAIT_POLLIN, 0};
  for (;;) {
    int running = 0;
    curl_multi_perform(multi.get(), &running);
    if (t.satisfied) break;
    if (running == 0) break;
    int left = poll_millis(deadline);
    if (left == 0 || readable(interrupt_fd)) {
      curl_multi_remove_handle(multi.get(), easy);
      return left == 0 ? Ended::kDeadline : Ended::kInterrupted;
    }
    curl_multi_poll(multi.get(), extra, extras, left < 0 ? 1 << 30 : left, nullptr);
    throw_if_cancelled(cancel);
  }
  result = CURLE_OK;
  int queued = 0;
  while (CURLMsg* m = curl_multi_info_read(multi.get(), &queued)) {
    if (m->msg == CURLMSG_DONE) result = m->data.result;
  }
  curl_multi_remove_handle(multi.get(), easy);
  return t.satisfied ? Ended::kSatisfied : Ended::kFinished;
}

// etcd's own words for a failed request: {"error": ..., "message": ..., "code": ...}.
std::string etcd_error(const std::string& response) {
  auto j = nlohmann::json::parse(response, nullptr, false);
  if (j.is_object() && j.contains("message")) return j["message"].get<std::string>();
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  return response.substr(0, 200);
}

}  // namespace

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw InvalidArgument("etcd: no endpoint given");
  for (const auto& e : options_.endpoints) check_etcd_endpoint(e);
  check_tls_files(options_);
  init_curl_once();
}

void check_tls_files(const EtcdOptions& o) {
  const std::pair<const char*, const std::string*> files[] = {
      {"etcd CA file", &o.ca_file},
      {"etcd certificate file", &o.cert_file},
      {"etcd key file", &o.key_file}};
  for (const auto& [what, path] : files) {
    if (path->empty()) continue;
    try {
      files::read_bounded(*path, {.what = what, .max_bytes = kMaxTlsFileBytes});
    } catch (const Error& e) {
      throw InvalidArgument(std::string("etcd: ") + e.what());
    }
  }
}

std::string EtcdClient::describe() const {
  std::string out = "etcd at ";
  for (size_t i = 0; i < options_.endpoints.size(); ++i) {
    out += (i ? ", " : "") + options_.endpoints[i];
  }
  return out;
}

nlohmann::json EtcdClient::call(const std::string& path, const nlohmann::json& body,
                                const Cancellation* cancel) const {
  bool satisfied = false;
  std::string text =
      post(path, body.dump(), Clock::now() + options_.timeout, cancel, nullptr, satisfied);
  auto answer = nlohmann::json::parse(text, nullptr, false);
  if (answer.is_discarded()) {
    throw Error(describe() + ": " + path + " answered with something that is not JSON");
  }
  return answer;
}

bool EtcdClient::stream(const std::string& path, const std::vector<nlohmann::json>& messages,
                        Clock::time_point deadline, const Cancellation* cancel,
                        const OnMessage& on_message) const {
  std::string body;  // the messages one after the other: etcd's gateway reads them in turn
  for (const auto& message : messages) body += message.dump();
  bool satisfied = false;
  post(path, body, deadline, cancel, &on_message, satisfied);
  return satisfied;
}

std::string EtcdClient::post(const std::string& path, const std::string& body,
                             Clock::time_point deadline, const Cancellation* cancel,
                             const OnMessage* on_message, bool& satisfied) const {
  std::map<std::string, std::string> failures;  // endpoint -> why it did not answer, last time
  // Rounds over the endpoints until one answers or the deadline: a member that is down, or one
  // without a leader while the cluster elects a new one, is a moment to wait out, not an error.
  for (;;) {
    for (const auto& endpoint : options_.endpoints) {
      throw_if_interrupted(path);
      if (auto answer =
              post_once(endpoint, path, body, deadline, cancel, on_message, satisfied, failures)) {
        return std::move(*answer);
      }
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    pollfd fds[2] = {{cancel_fd(cancel), POLLIN, 0}, {options_.interrupt_fd, POLLIN, 0}};
    ::poll(fds, 2, poll_millis(now, std::min(deadline, now + kRetryPause)));
    throw_if_cancelled(cancel);
  }
  std::string why;
  for (const auto& [endpoint, failure] : failures) {
    why += (why.empty() ? "" : "; ") + endpoint + ": " + failure;
  }
  throw StoreUnreachable(describe() + ": " + path + ": no endpoint answered in time (" + why + ")");
}

std::optional<std::string> EtcdClient::post_once(
    const std::string& endpoint, const std::string& path, const std::string& body,
    Clock::time_point deadline, const Cancellation* cancel, const OnMessage* on_message,
    bool& satisfied, std::map<std::string, std::string>& failures) const {
  std::unique_ptr<curl_slist, ListDeleter> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"));
  Transfer t;
  t.request = body;
  t.on_message = on_message;
  auto easy = make_request(options_, endpoint + path, t, headers.get());
  CURLcode result = CURLE_OK;
  Ended ended = run(easy.get(), t, deadline, cancel, options_.interrupt_fd, result);
  if (t.error) std::rethrow_exception(t.error);
  if (ended == Ended::kInterrupted) throw interrupted(path);
  if (ended == Ended::kSatisfied) {
    satisfied = true;
    return std::string();
  }
  if (ended == Ended::kDeadline) {
    // A watch that saw nothing in time ends quietly (the caller's timeout), unless the earlier
    // tries of this call failed: then it is an etcd that cannot be reached.
    if (on_message && failures.empty()) return std::string();
    // Cut by the deadline: what the endpoint said before, if it said anything, says more.
    failures.try_emplace(endpoint, "no answer in time");
    return std::nullopt;
  }
  if (result == CURLE_PEER_FAILED_VERIFICATION || result == CURLE_SSL_CERTPROBLEM ||
      result == CURLE_SSL_CACERT_BADFILE || result == CURLE_SSL_ISSUER_ERROR) {
    // A certificate that does not verify, or one this client cannot load, stays so: say it now.
    throw Error(describe() + ": " + path + " at " + endpoint + ": " + curl_easy_strerror(result));
  }
  if (result != CURLE_OK) {
    failures[endpoint] = curl_easy_strerror(result);
    return std::nullopt;  // unreachable: another endpoint may answer
  }
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  if (etcd_outage(status, 0)) {  // "leader changed", "no leader", "request timed out", ...
    failures[endpoint] = etcd_error(t.response) + " (HTTP " + std::to_string(status) + ")";
    return std::nullopt;
  }
  if (status != 200) {
    std::string why = etcd_error(t.response);
    std::string what = describe() + ": " + path + " failed at " + endpoint + ": " + why +
                       " (HTTP " + std::to_string(status) + ")";
    if (status == 404 && why.find("lease not found") != std::string::npos) {
      throw EtcdLeaseNotFound(what);
    }
    throw Error(what);
  }
  if (on_message) {  // the stream's connection ended (a member stopping): as if unreachable
    throw StoreUnreachable(describe() + ": " + path + " at " + endpoint + " ended early");
  }
  return std::move(t.response);
}

EtcdInterrupted EtcdClient::interrupted(const std::string& path) const {
  return EtcdInterrupted(describe() + ": " + path +
                         ": interrupted, unanswered (this process is stopping)");
}

void EtcdClient::throw_if_interrupted(const std::string& path) const {
  if (readable(options_.interrupt_fd)) throw interrupted(path);
}

void check_etcd_endpoint(std::string_view endpoint) {
  std::string what = "etcd endpoint '" + std::string(endpoint) + "'";
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
    throw InvalidArgument(what + " is not an http:// or https:// URL");
  }
  std::string_view rest = endpoint.substr(endpoint.find("://") + 3);
  if (rest.starts_with('[')) {
    throw InvalidArgument(what +
                          " has an IPv6 address, which Cohort does not support: give a "
                          "host name or an IPv4 address");
  }
  if (size_t extra = rest.find_first_of("/?#@"); extra != std::string_view::npos) {
    throw InvalidArgument(what + " has more than a host and a port ('" +
                          std::string(rest.substr(extra)) + "'): give scheme://host:port");
  }
  size_t colon = rest.rfind(':');
  std::string_view host = rest.substr(0, colon);
  if (host.empty()) throw InvalidArgument(what + " names no host");
  if (!net::valid_host_name(host)) {
    throw InvalidArgument(what + ": '" + std::string(host) +
                          "' is not a host name or an IPv4 address (letters, digits, '.', '-' "
                          "and '_')");
  }
  if (colon == std::string_view::npos) return;  // the scheme's port: 80 or 443
  std::string_view port = rest.substr(colon + 1);
  if (!net::parse_port(port)) {
    throw InvalidArgument(what + ": port " +
                          decimal_refusal(port, net::kLowestPort, net::kHighestPort));
  }
}

std::vector<std::string> parse_etcd_endpoints(std::string_view list) {
  std::vector<std::string> endpoints;
  for (;;) {
    size_t comma = list.find(',');
    check_etcd_endpoint(list.substr(0, comma));
    endpoints.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) return endpoints;
    list.remove_prefix(comma + 1);
  }
}

bool etcd_outage(int64_t http_status, int64_t grpc_code) {
  return http_status == 503 || http_status == 504 || http_status == 429 || grpc_code == 14 ||
         grpc_code == 4 || grpc_code == 8;
}

int64_t json_integer(const nlohmann::json& object, const char* field) {
  if (!object.is_object() || !object.contains(field)) return 0;
  const auto& v = object[field];
  std::optional<int64_t> value;
  if (v.is_string()) {
    value = parse_decimal<int64_t>(v.get_ref<const std::string&>());  // etcd's int64 as text
  } else if (v.is_number_integer()) {
    value = v.get<int64_t>();
  }
  if (!value) {
    throw Error(std::string("etcd answered a field '") + field +
                "' that is not an integer: " + v.dump());
  }
  return *value;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string unbase64(std::string_view text) {
  if (text.size() % 4 != 0) throw InvalidArgument("not base64: its length is not a multiple of 4");
  std::string out(3 * (text.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) throw InvalidArgument("not base64");
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t padding = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

}  // namespace cohort::rendezvous
