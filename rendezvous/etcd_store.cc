#include "rendezvous/etcd_store.h"

#include "base/log.h"
#include "cohort/errors.h"
#include "rendezvous/protocol.h"
#include "rendezvous/signed_value.h"

namespace cohort::rendezvous {
namespace {

// The end of the key range that holds every key starting with `prefix` (etcd's convention: the
// prefix with its last byte increased, dropping trailing 0xff bytes).
std::string range_end(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::string(1, '\0');  // every key
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

// The store revision an answer was read at.
int64_t revision_of(const nlohmann::json& answer) {
  return json_integer(answer.value("header", nlohmann::json::object()), "revision");
}

// How many times create() replaces refused values that keep coming back before it gives up.
constexpr int kReplaceAttempts = 3;

}  // namespace

KeyRange KeyRange::under(const std::string& prefix) {
  if (prefix.empty()) return {};
  std::string end = range_end(prefix);
  return {prefix, end.size() == 1 && end[0] == '\0' ? std::string() : end};
}

KeyRange KeyRange::only(const std::string& key) {
  return {key, key + std::string(1, '\0')};
}

bool KeyRange::contains(std::string_view key) const {
  return key >= begin && (end.empty() || key < end);
}

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : client_(std::move(options.etcd)),
      prefix_(std::move(options.prefix)),
      secret_(std::move(options.secret)) {}

std::string EtcdStore::describe() const {
  return client_.describe() + " (keys under '" + prefix_ + "')";
}

std::string EtcdStore::sealed(const std::string& key, const std::string& value) const {
  return seal_value(secret_, prefix_ + key, value);
}

std::optional<std::string> EtcdStore::open(const nlohmann::json& kv, const std::string& key) const {
  try {
    return open_value(secret_, prefix_ + key, unbase64(kv.value("value", "")));
  } catch (const Error& e) {
    // Anyone with write access to etcd can put this; it cannot make the job act on it.
    // Rate-limited as one class, whatever the key: an agent reads every key of its job at each
    // change, and whoever writes junk keys must not pick how many lines are written.
    log::limited_burst(log::Level::kWarning, "etcd-unsealed", 4, "rendezvous: refused ", describe(),
                       ": ", e.what());
    return std::nullopt;
  }
}

EtcdStore::Read EtcdStore::read(const std::string& key, const Cancellation* cancel) {
  auto answer = client_.call("/v3/kv/range", {{"key", base64(prefix_ + key)}}, cancel);
  Read r;
  r.revision = revision_of(answer);
  if (answer.contains("kvs") && !answer["kvs"].empty()) r.value = open(answer["kvs"][0], key);
  return r;
}

nlohmann::json EtcdStore::put_request(const std::string& key, const std::string& value,
                                      int64_t lease) const {
  nlohmann::json put = {{"key", base64(prefix_ + key)}, {"value", base64(sealed(key, value))}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return put;
}

void EtcdStore::set(const std::string& key, const std::string& value, const Cancellation* cancel) {
  set_leased(key, value, 0, cancel);
}

std::optional<std::string> EtcdStore::lookup(const std::string& key, const Cancellation* cancel) {
  return read(key, cancel).value;
}

std::string EtcdStore::get(const std::string& key, std::chrono::milliseconds wait,
                           const Cancellation* cancel) {
  auto deadline = EtcdClient::Clock::now() + wait;
  Read now = read(key, cancel);
  if (now.value) return *now.value;
  // Every change after the read, so that a set between the read and the watch is not missed.
  nlohmann::json request = {
      {"create_request",
       {{"key", base64(prefix_ + key)}, {"start_revision", std::to_string(now.revision + 1)}}}};
  std::optional<std::string> found;
  bool got = watch({request}, deadline, cancel, [&](const nlohmann::json& result) {
    for (const auto& event : result.value("events", nlohmann::json::array())) {
      if (event.value("type", "PUT") == "PUT" && (found = open(event["kv"], key))) return true;
    }
    return false;
  });
  if (got) return *found;
  throw RendezvousTimeout(describe() + ": key '" + key + "' was not set within " +
                          std::to_string(wait.count()) + " ms");
}

bool EtcdStore::compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                                const std::string& desired, const Cancellation* cancel) {
  if (!expected) return create(key, desired, 0, cancel);  // unset, or refused: as good as unset
  nlohmann::json holds = {{"key", base64(prefix_ + key)},
                          {"target", "VALUE"},
                          {"result", "EQUAL"},
                          {"value", base64(sealed(key, *expected))}};
  return put_if(key, holds, desired, 0, cancel).holds;
}

bool EtcdStore::remove(const std::string& key, const Cancellation* cancel) {
  auto answer = client_.call("/v3/kv/deleterange", {{"key", base64(prefix_ + key)}}, cancel);
  if (json_integer(answer, "deleted") == 0) return false;
  wrote(answer, key);
  return true;
}

bool EtcdStore::remove_if_holds(const std::string& key, const std::string& value,
                                const Cancellation* cancel) {
  std::string k = base64(prefix_ + key);
  nlohmann::json txn = {{"compare",
                         {{{"key", k},
                           {"target", "VALUE"},
                           {"result", "EQUAL"},
                           {"value", base64(sealed(key, value))}}}},
                        {"success", {{{"request_delete_range", {{"key", k}}}}}}};
  auto answer = client_.call("/v3/kv/txn", txn, cancel);
  if (!answer.value("succeeded", false)) return false;
  wrote(answer, key);
  return true;
}

void EtcdStore::set_leased(const std::string& key, const std::string& value, int64_t lease,
                           const Cancellation* cancel) {
  wrote(client_.call("/v3/kv/put", put_request(key, value, lease), cancel), key);
}

void EtcdStore::wrote(const nlohmann::json& answer, const std::string& key) {
  int64_t revision = revision_of(answer);
  written_.store(revision, std::memory_order_relaxed);
  MutexLock lock(writes_mutex_);
  written_keys_[key] = revision;
}

std::map<std::string, int64_t> EtcdStore::written_keys() const {
  MutexLock lock(writes_mutex_);
  return written_keys_;
}

void EtcdStore::forget_written_keys() {
  MutexLock lock(writes_mutex_);
  written_keys_.clear();
}

bool EtcdStore::create(const std::string& key, const std::string& value, int64_t lease,
                       const Cancellation* cancel) {
  std::string k = base64(prefix_ + key);
  nlohmann::json condition = unset(k);
  // Each try fails only if someone wrote the key since the last: a writer that keeps overwriting
  // it wins this call, and the caller tries again at its next read of etcd.
  for (int attempt = 0; attempt < kReplaceAttempts; ++attempt) {
    PutResult put = put_if(key, condition, value, lease, cancel);
    if (put.holds) return true;
    if (!put.other) {
      condition = unset(k);  // removed since
      continue;
    }
    if (open(*put.other, key)) return false;  // this job's own value (logs one it refuses)
    std::string revision = std::to_string(json_integer(*put.other, "mod_revision"));
    log::limited(log::Level::kWarning, "etcd-replaced", "rendezvous: replacing the refused value ",
                 "of '", key, "' (revision ", revision, ") in ", describe());
    condition = {{"key", k}, {"target", "MOD"}, {"result", "EQUAL"}, {"mod_revision", revision}};
  }
  return false;
}

bool EtcdStore::create_new(const std::string& key, const std::string& value,
                           const Cancellation* cancel) {
  return put_if(key, unset(base64(prefix_ + key)), value, 0, cancel).holds;
}

EtcdStore::Held EtcdStore::held(const std::string& key, const Cancellation* cancel) {
  auto answer = client_.call("/v3/kv/range", {{"key", base64(prefix_ + key)}}, cancel);
  Held h;
  if (!answer.contains("kvs") || answer["kvs"].empty()) return h;
  std::string raw = unbase64(answer["kvs"][0].value("value", ""));
  try {
    h.value = open_value(secret_, prefix_ + key, raw);
    h.state = Held::State::kSealed;
  } catch (const Error&) {
    h.value = std::move(raw);
    h.state = Held::State::kRefused;
  }
  return h;
}

nlohmann::json EtcdStore::unset(const std::string& encoded_key) {
  return {
      {"key", encoded_key}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
}

EtcdStore::PutResult EtcdStore::put_if(const std::string& key, const nlohmann::json& compare,
                                       const std::string& value, int64_t lease,
                                       const Cancellation* cancel) {
  nlohmann::json put = put_request(key, value, lease);
  const std::string& mine = put["value"].get_ref<const std::string&>();
  nlohmann::json txn = {{"compare", {compare}},
                        {"success", {{{"request_put", put}}}},
                        {"failure", {{{"request_range", {{"key", put["key"]}}}}}}};
  auto answer = client_.call("/v3/kv/txn", txn, cancel);
  if (answer.value("succeeded", false)) {
    wrote(answer, key);
    return {.holds = true};
  }
  PutResult result;
  for (const auto& response : answer.value("responses", nlohmann::json::array())) {
    for (const auto& kv : response.value("response_range", nlohmann::json::object())
                              .value("kvs", nlohmann::json::array())) {
      // Idempotent: the key already holds `value` (this caller's earlier attempt, whose answer
      // was lost, or the same choice made by another).
      if (kv.value("value", "") == mine) return {.holds = true};
      result.other = kv;
    }
  }
  return result;
}

EtcdStore::Listing EtcdStore::list(const std::string& key_prefix, const Cancellation* cancel) {
  auto answer = client_.call("/v3/kv/range", range_request(KeyRange::under(key_prefix)), cancel);
  Listing listing;
  listing.revision = revision_of(answer);
  add_listed(answer, listing);
  return listing;
}

EtcdStore::Listing EtcdStore::list(const std::vector<KeyRange>& ranges,
                                   const Cancellation* cancel) {
  nlohmann::json reads = nlohmann::json::array();
  for (const auto& range : ranges) reads.push_back({{"request_range", range_request(range)}});
  auto answer = client_.call("/v3/kv/txn", {{"success", reads}}, cancel);
  Listing listing;
  listing.revision = revision_of(answer);
  for (const auto& response : answer.value("responses", nlohmann::json::array())) {
    add_listed(response.value("response_range", nlohmann::json::object()), listing);
  }
  return listing;
}

nlohmann::json EtcdStore::range_request(const KeyRange& range) const {
  std::string end = range.end.empty() ? range_end(prefix_) : prefix_ + range.end;
  return {{"key", base64(prefix_ + range.begin)}, {"range_end", base64(end)}};
}

void EtcdStore::add_listed(const nlohmann::json& answer, Listing& listing) const {
  for (const auto& kv : answer.value("kvs", nlohmann::json::array())) {
    std::string key = unbase64(kv.value("key", "")).substr(prefix_.size());
    if (auto value = open(kv, key)) {
      listing.values.emplace(key, std::move(*value));
    } else {
      listing.refused.emplace(key, unbase64(kv.value("value", "")));
    }
  }
}

bool EtcdStore::wait_for_change(const std::string& key_prefix, int64_t revision,
                                std::chrono::milliseconds wait, const Cancellation* cancel) {
  return watch_changes(key_prefix, revision, EtcdClient::Clock::now() + wait, cancel,
                       [](const WatchBatch& batch) {
                         // History gone: look again.
                         return batch.compacted != 0 || !batch.changes.empty();
                       });
}

bool EtcdStore::watch_changes(const std::string& key_prefix, int64_t revision,
                              EtcdClient::Clock::time_point deadline, const Cancellation* cancel,
                              const std::function<bool(const WatchBatch&)>& on_batch) {
  return watch_changes(std::vector<KeyRange>{KeyRange::under(key_prefix)}, revision, deadline,
                       cancel, on_batch);
}

bool EtcdStore::watch_changes(const std::vector<KeyRange>& ranges, int64_t revision,
                              EtcdClient::Clock::time_point deadline, const Cancellation* cancel,
                              const std::function<bool(const WatchBatch&)>& on_batch) {
  std::vector<nlohmann::json> requests;
  for (const auto& range : ranges) {
    nlohmann::json create = range_request(range);
    create["start_revision"] = std::to_string(revision + 1);
    requests.push_back({{"create_request", std::move(create)}});
  }
  return watch(requests, deadline, cancel, [&](const nlohmann::json& result) {
    WatchBatch batch{.created = result.value("created", false),
                     .revision = revision_of(result),
                     .compacted = json_integer(result, "compact_revision")};
    if (result.value("canceled", false) && batch.compacted == 0) {
      throw Error(describe() + ": etcd cancelled the watch: " +
                  result.value("cancel_reason", std::string("no reason given")));
    }
    for (const auto& event : result.value("events", nlohmann::json::array())) {
      const auto& kv = event.value("kv", nlohmann::json::object());
      Change change{.key = unbase64(kv.value("key", "")).substr(prefix_.size()),
                    .revision = json_integer(kv, "mod_revision")};
      if (event.value("type", "PUT") == "PUT") change.value = open(kv, change.key);
      batch.changes.push_back(std::move(change));
    }
    return on_batch(batch);
  });
}

// A stream's error: etcd's member going away or overloaded (etcd_outage) is an outage; anything
// else etcd says is a refusal.
void EtcdStore::throw_watch_error(const nlohmann::json& error) const {
  std::string what = describe() + ": watch failed: " + error.dump();
  int64_t grpc = json_integer(error, "grpc_code") + json_integer(error, "code");
  int64_t http = json_integer(error, "http_code");
  if (etcd_outage(http, grpc)) throw StoreUnreachable(what);
  throw Error(what);
}

bool EtcdStore::watch(const std::vector<nlohmann::json>& requests,
                      EtcdClient::Clock::time_point deadline, const Cancellation* cancel,
                      const std::function<bool(const nlohmann::json& result)>& on_result) {
  return client_.stream("/v3/watch", requests, deadline, cancel, [&](const nlohmann::json& m) {
    if (m.contains("error")) throw_watch_error(m["error"]);
    return on_result(m.value("result", nlohmann::json::object()));
  });
}

}  // namespace cohort::rendezvous
