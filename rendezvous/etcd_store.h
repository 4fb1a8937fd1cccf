// The Store (rendezvous/store.h) on an etcd v3 cluster, for jobs that no single launcher process
// holds. Every key lives under a per-job, per-scope prefix, and every value is sealed with the job
// secret for its key (rendezvous/signed_value.h): etcd may be shared with other jobs and users,
// and a value this job did not write for that key is refused and logged, as if it were not there.
// A get that must wait watches the key (no polling); compare-and-set is one etcd transaction.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/store.h"

namespace cohort::rendezvous {

// The keys of a store from `begin` (included) to `end` (excluded), both relative to its prefix;
// an empty `end`: every key from `begin` on. What an agent reads and watches
// (agent/agent_ranges.h).
struct KeyRange {
  std::string begin;
  std::string end;
  // Every key that starts with `prefix`.
  static KeyRange under(const std::string& prefix);
  // `key` alone.
  static KeyRange only(const std::string& key);
  bool contains(std::string_view key) const;
  bool operator==(const KeyRange&) const = default;
};

struct EtcdStoreOptions {
  EtcdOptions etcd;
  // Every key of this store is `prefix` + key, e.g. "/cohort/<job id>/elastic/".
  std::string prefix;
  // The job's secret (kSecretSize bytes), which seals every value.
  std::string secret;
};

class EtcdStore final : public Store {
 public:
  explicit EtcdStore(EtcdStoreOptions options);

  void set(const std::string& key, const std::string& value,
           const Cancellation* cancel = nullptr) override;
  std::string get(const std::string& key, std::chrono::milliseconds wait,
                  const Cancellation* cancel = nullptr) override;
  std::optional<std::string> lookup(const std::string& key,
                                    const Cancellation* cancel = nullptr) override;
  bool compare_and_set(const std::string& key, const std::optional<std::string>& expected,
                       const std::string& desired, const Cancellation* cancel = nullptr) override;
  bool remove(const std::string& key, const Cancellation* cancel = nullptr) override;
  // Removes `key` if it holds `value` (sealed by this job), in one transaction; true if it did.
  bool remove_if_holds(const std::string& key, const std::string& value,
                       const Cancellation* cancel = nullptr);
  std::string describe() const override;

  // What agents need beyond the Store (agent/agent_*.h): keys that vanish with a lease,
  // listings of a key prefix, and waiting for any change under one.

  // Sets `key` under `lease` (an EtcdLease's id; 0: none).
  void set_leased(const std::string& key, const std::string& value, int64_t lease,
                  const Cancellation* cancel = nullptr);
  // Sets `key` under `lease` if it is not set, or holds bytes this job refuses (unsealed, forged
  // or copied from another key: as good as unset, and left there they would block the key for
  // good); true if it holds `value` afterwards (idempotent like compare_and_set). A refused value
  // is replaced by a compare-and-set on its own revision, so a value written meanwhile stays.
  bool create(const std::string& key, const std::string& value, int64_t lease,
              const Cancellation* cancel = nullptr);
  // Like create, but any bytes at `key`, refused or not, block it: for a key whose presence alone
  // says something (the job's marker, agent/agent_job_id.h).
  bool create_new(const std::string& key, const std::string& value,
                  const Cancellation* cancel = nullptr);

  // What `key` holds, for a caller that must tell "unset" from "refused" (lookup cannot).
  struct Held {
    enum class State { kUnset, kSealed, kRefused };
    State state = State::kUnset;
    std::string value;  // kSealed: the value; kRefused: the raw bytes, unverified
  };
  Held held(const std::string& key, const Cancellation* cancel = nullptr);

  // The keys under `key_prefix` (relative to the store's prefix, in key order) with their values,
  // leaving out values this job did not seal, and the revision they were read at.
  struct Listing {
    std::map<std::string, std::string> values;
    int64_t revision = 0;
    std::map<std::string, std::string> refused;  // the values left out: key -> raw bytes
  };
  Listing list(const std::string& key_prefix, const Cancellation* cancel = nullptr);
  // The keys in `ranges`, all read at one revision (one transaction).
  Listing list(const std::vector<KeyRange>& ranges, const Cancellation* cancel = nullptr);
  // Waits until anything under `key_prefix` changes (set, removed, or vanished with its lease)
  // after `revision`; false when nothing did within `wait`.
  bool wait_for_change(const std::string& key_prefix, int64_t revision,
                       std::chrono::milliseconds wait, const Cancellation* cancel = nullptr);

  // A change under the store's prefix, as etcd's watch reports it.
  struct Change {
    std::string key;                   // relative to the store's prefix
    std::optional<std::string> value;  // nothing: removed, or bytes this job did not seal (refused
                                       // and logged exactly as list() refuses them)
    int64_t revision = 0;              // the revision that made the change
  };
  // One message of a watch.
  struct WatchBatch {
    std::vector<Change> changes;  // in revision order
    bool created = false;         // the watch's first message
    int64_t revision = 0;         // etcd's revision when it sent the message
    int64_t compacted = 0;        // not 0: the history asked for is gone; the watch has ended
  };
  // Watches everything under `key_prefix` after `revision`, handing each message to `on_batch`
  // until it returns true (then true) or until `deadline` (then false). A watch etcd cancels for
  // another reason than compaction throws Error naming the reason; other errors as list().
  bool watch_changes(const std::string& key_prefix, int64_t revision,
                     EtcdClient::Clock::time_point deadline, const Cancellation* cancel,
                     const std::function<bool(const WatchBatch&)>& on_batch);
  // The same for the keys in `ranges`: one watch each, all on one stream (one connection). Each
  // watch delivers its range's changes in revision order, and its own first message (`created`).
  bool watch_changes(const std::vector<KeyRange>& ranges, int64_t revision,
                     EtcdClient::Clock::time_point deadline, const Cancellation* cancel,
                     const std::function<bool(const WatchBatch&)>& on_batch);
  // The revision of this object's last write that changed a key (a put, a transaction that put, a
  // removal that removed); 0 before any. A watch of the prefix reports that change at it (lower
  // than one before: etcd lost its data in between).
  int64_t written_revision() const { return written_.load(std::memory_order_relaxed); }
  // The keys this object wrote (as written_revision counts writes) since forget_written_keys(),
  // each with the revision of its last write: a watch of that key reports the change at it.
  std::map<std::string, int64_t> written_keys() const;
  void forget_written_keys();

 private:
  // A key's value now (nullopt: unset, or not sealed by this job), and the revision of the store
  // it was read at.
  struct Read {
    std::optional<std::string> value;
    int64_t revision = 0;
  };
  Read read(const std::string& key, const Cancellation* cancel);
  // The value in an etcd key-value record, if this job sealed it for `key`; logs one it did not.
  std::optional<std::string> open(const nlohmann::json& kv, const std::string& key) const;
  std::string sealed(const std::string& key, const std::string& value) const;
  // A put of `value` sealed for `key`, under `lease` if not 0.
  nlohmann::json put_request(const std::string& key, const std::string& value, int64_t lease) const;
  // `range` as the "key" and "range_end" of an etcd request.
  nlohmann::json range_request(const KeyRange& range) const;
  // The keys and values of etcd's range answer `answer` into `listing`, refused ones left out.
  void add_listed(const nlohmann::json& answer, Listing& listing) const;
  // Watches from `requests` (/v3/watch create requests) until `on_result` returns true for a
  // message's result (then true) or `deadline` (then false); an error from etcd throws.
  [[noreturn]] void throw_watch_error(const nlohmann::json& error) const;
  bool watch(const std::vector<nlohmann::json>& requests, EtcdClient::Clock::time_point deadline,
             const Cancellation* cancel,
             const std::function<bool(const nlohmann::json& result)>& on_result);
  // The transaction condition "`encoded_key` is not set".
  static nlohmann::json unset(const std::string& encoded_key);
  // What put_if found: whether the key holds the value put afterwards and, if not, the etcd
  // key-value record it holds instead (none: the key is unset).
  struct PutResult {
    bool holds = false;
    std::optional<nlohmann::json> other;
  };
  // Puts `value` (sealed for `key`, under `lease` if not 0) if `compare` holds, in one
  // transaction (see compare_and_set).
  PutResult put_if(const std::string& key, const nlohmann::json& compare, const std::string& value,
                   int64_t lease, const Cancellation* cancel);

  // Notes the revision of a write that changed `key` (written_revision, written_keys).
  void wrote(const nlohmann::json& answer, const std::string& key);

  EtcdClient client_;
  const std::string prefix_;
  const std::string secret_;
  std::atomic<int64_t> written_{0};
  mutable Mutex writes_mutex_;
  std::map<std::string, int64_t> written_keys_ GUARDED_BY(writes_mutex_);
};

}  // namespace cohort::rendezvous
