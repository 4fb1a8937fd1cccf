// Rank 0's table of submitted tensors: it records which rank asked for which name, decides when a
// name is ready on every rank of its process set, checks that all ranks described it the same
// way, and hands out responses in one order that every rank then executes. It also tracks which
// ranks have joined (run out of data): their allreduces proceed without them.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/hit_bits.h"
#include "core/request.h"
#include "core/response_cache.h"

namespace cohort {

class Negotiator {
 public:
  // With a `cache`, responses carry response-cache ids (see core/response_cache.h).
  explicit Negotiator(int size, ResponseCache* cache = nullptr);

  // Records that `rank` submitted `request`; returns how many ranks have now submitted its name.
  int add(int rank, Request request);
  // Records that `rank` submitted the request cached under `hit` (an encoded hit, as
  // RequestList::hits holds it): counted against the id, a bit per rank, with no Request built
  // (core/negotiator_hits.cc); what needs the full table (another rank described the name in
  // full, a set being removed, a stall, a shutdown) moves the id's submissions there. Needs a
  // cache. Returns how many ranks have now submitted its name.
  int hit(int rank, uint32_t hit);
  // The same for `n` hits on consecutive ids from `first`, all with first's buffer bit, as
  // RequestList::hits holds a model's tensors: a few word operations where their slots are
  // consecutive too.
  void hit_run(int rank, uint32_t first, size_t n);
  // The same for several ranks that sent the same hits (a host leader's envelope,
  // core/envelope.h): each slot's count moves once for all of them.
  void hit_run(std::span<const int> ranks, uint32_t first, size_t n);
  // Records that `rank` will submit nothing more.
  void mark_shut_down(int rank);
  bool all_shut_down() const;

  // Makes process set `id` known with these member ranks (sorted global ranks).
  void add_process_set(int id, std::vector<int> members);
  // The id the next added process set gets: ids are never reused, so a removed set's id stays
  // an error rather than naming a newer set.
  int next_process_set_id() const { return next_set_id_; }

  // Responses for every name that is now ready on all ranks (or can never be), in the order in
  // which they became ready, allreduces fused up to `fusion_threshold` bytes (0: no fusion).
  // Removes them from the table.
  std::vector<Response> take_ready(size_t fusion_threshold = 0);

  size_t pending() const { return table_.size() + pending_slots_; }

  using Clock = std::chrono::steady_clock;
  // The stall inspector's report: for each rank, the names (at most a few) that other ranks
  // submitted more than `after` ago and it has not. Empty when nothing has waited that long.
  std::string stall_report(Clock::time_point now, Clock::duration after) const;
  // Fails (kStalled responses) and removes every name that has waited longer than `after`.
  std::vector<Response> expire_stalled(Clock::time_point now, Clock::duration after);

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    int count = 0;
    Clock::time_point first_seen;
    bool ready = false;  // in ready_order_
  };
  static constexpr size_t kNamesPerRank = 5;
  // Names are unique per process set: ranks outside a set may use its names in other sets.
  using Key = std::pair<int32_t, std::string>;
  // A cached id's submissions since it last ran (which ranks, how many: bits_, at the same
  // slot; whether some rank's buffer changed: changed_). A slot stays with its id across cycles,
  // so that the steady state allocates nothing and looks up no name.
  struct Hits {
    size_t slot = 0;
    Key key;
    Request request;                             // as cached, buffer_changed false
    const std::vector<size_t>* named = nullptr;  // the slots of its key (named_), itself included
    Clock::time_point first_seen;
    const std::vector<int>* members = nullptr;  // the set's, while pending
    bool pending = false;                       // counting this cycle's hits
    bool ready = false;                         // in ready_order_
  };
  static constexpr int kNoSlot = -1;
  // A name ready to run: in table_, or in the hits_ slot.
  struct Ready {
    Key key;
    int slot = kNoSlot;
  };
  static std::string describe(const Key& key);

  const std::vector<int>& members(const Entry& entry) const;
  // The members of entry's process set for which keep(rank) holds, in rank order.
  std::vector<int> members_where(const Entry& entry, const std::function<bool(int)>& keep) const;
  // The ranks of the entry's set that have neither submitted it nor joined.
  std::vector<int> missing(const Entry& entry) const;
  // The one rule behind both: the members of `set` for which submitted(rank) is false, less the
  // joined ranks, which stand in for every collective of the world but join.
  std::vector<int> missing_from(int32_t set, OpType type,
                                const std::function<bool(int)>& submitted) const;
  // The members that have not submitted the entry (joined ranks included), for
  // Response::not_submitted.
  std::vector<int64_t> not_submitted(const Entry& entry) const;
  std::string missing_ranks(const Entry& entry) const;
  const Request& description(const Entry& entry) const;
  void mark_if_ready(const Key& key, Entry& entry);
  void mark_if_ready(Hits& hits);
  // Whether slots [slot, slot + n) hold ids from `id` on, in order, all on the fast path.
  // Remembers the last run found so (every rank of a cached step sends the same), until a slot
  // leaves the fast path (close, prune_hits).
  bool run_is_fast(size_t slot, uint32_t id, size_t n);
  // Marks the slots that hit_run() completed (it leaves them to this, once a cycle).
  void mark_ready_hits();
  // The slot of an encoded hit's id, made from the cached request on its first hit.
  Hits& hits_for(uint32_t hit);
  // Starts counting `hits` for this cycle; false if its name must go the full way.
  bool open(Hits& hits);
  // Moves the slot's submissions into table_ (as full requests) and frees it.
  void to_table(Hits& hits);
  // Moves the pending slots for which move(slot) holds into table_.
  void to_table_where(const std::function<bool(const Hits&)>& move);
  // The pending slots, in the order of their keys (as rules that go through them in turn, and
  // the stall report, take them).
  std::vector<size_t> pending_by_key() const;
  // Moves the pending slot of `key`, if there is one, into table_.
  void key_to_table(const Key& key);
  // Frees the slots (their bits, in one pass over the ranks).
  void close(const std::vector<size_t>& slots);
  bool has(const Hits& hits, int rank) const { return bits_.has(hits.slot, rank); }
  [[noreturn]] void submitted_twice(int rank, const Hits& hits) const;
  // Whether a ready slot's response needs the full table: to fail (a removed set, a collective
  // that cannot run while ranks have joined).
  bool needs_table(const Hits& hits) const;
  // Whether joined ranks stood in for some member that did not hit it.
  bool stood_in(const Hits& hits) const;
  Response construct_cached(const Hits& hits) const;
  // Forgets idle slots once there are many more than the cache holds.
  void prune_hits();
  void record_join(int rank);
  std::optional<Response> reject(int rank, const Request& request) const;
  // One name pending in two process sets (core/negotiator_names.cc): whether another set has the
  // key's name pending (in table_ or in a slot).
  bool pending_elsewhere(const Key& key) const;
  // Whether `waiting` still needs ranks, all of which have submitted `busy` instead.
  bool waits_for_busy(const Entry& waiting, const Entry& busy) const;
  // Fails the key's entry, and the same name's in another set, when each waits only for ranks
  // busy with the other: neither can complete, and every rank of both has submitted one of them.
  // True if it did.
  bool fail_if_deadlocked_across_sets(const Key& key);
  void fail_together(const Key& a, const Key& b);

  Response construct(const std::string& name, const Entry& entry) const;
  std::optional<std::string> cannot_run(const Entry& entry) const;
  std::optional<std::string> orphaned_by_shutdown(const Entry& entry) const;
  // Applies a ready add or remove of a process set to the table (ids, members).
  void change_process_sets(const Entry& entry, Response& response);
  // Why a removal cannot go ahead (the set does not exist, is the world); nullopt if it can.
  std::optional<std::string> cannot_remove(const Request& request) const;
  // Fails (kError) and removes the names still waiting in sets removed by this take_ready().
  void fail_removed_sets(std::vector<Response>& responses);

  int size_;
  ResponseCache* cache_;
  std::map<Key, Entry> table_;
  std::vector<Ready> ready_order_;
  std::vector<Hits> hits_;
  HitBits bits_;
  std::vector<uint32_t> slot_id_;  // per slot, its id
  std::vector<uint8_t> fast_;      // per slot: pending in the world set, where runs take no detour
  std::vector<uint8_t> changed_;   // per slot: some rank's hit said its buffer changed
  std::unordered_map<uint32_t, size_t> slot_of_;  // id -> its slot in hits_
  // Each key's slots (ids of one name: an evicted one, a live one); at most one is pending.
  std::map<Key, std::vector<size_t>> named_;
  size_t pending_slots_ = 0;  // how many slots are pending
  struct Run {
    size_t slot = 0;
    uint32_t id = 0;
    size_t n = 0;
  };
  std::optional<Run> fast_run_;  // run_is_fast()'s last yes
  size_t next_slot_ = 0;         // the slot the next hit most likely names (ids come in runs)
  bool runs_counted_ = false;    // hit_run() counted hits that mark_ready_hits() has not looked at
  std::vector<Response> rejected_;
  std::map<int, std::vector<int>> sets_;  // process set id -> member ranks; 0 is everyone
  std::set<int> removed_;                 // ids of removed process sets, for precise errors
  std::vector<int> just_removed_;         // removed in this take_ready(): sets_ still has them
  int next_set_id_ = 1;
  std::vector<bool> shut_down_;
  std::vector<bool> joined_;
  std::vector<int> joined_ranks_;  // the ranks for which joined_ is true
  int joined() const { return static_cast<int>(joined_ranks_.size()); }
  int last_joined_ = -1;
};

// Checks that every submitting rank's request for one name agrees; returns the error message if
// not. Ranks that did not submit (they joined) have no request and are skipped.
std::optional<std::string> find_mismatch(const std::string& name,
                                         const std::vector<std::optional<Request>>& by_rank);

}  // namespace cohort
