#include "launcher/elastic_hosts.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/host_port.h"
#include "base/log.h"
#include "cohort/errors.h"
#include "launcher/host_groups.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {
namespace {

using std::chrono::milliseconds;

std::string failures_text(int failures) {
  return std::to_string(failures) + (failures == 1 ? " failure" : " failures");
}

void validate(const ElasticHostsOptions& o) {
  if (o.min_np < 1) throw InvalidArgument("--min-np must be at least 1");
  if (o.max_np && *o.max_np < o.min_np) {
    throw InvalidArgument("--max-np " + std::to_string(*o.max_np) + " is less than --min-np " +
                          std::to_string(o.min_np));
  }
  if (o.elastic_timeout.count() < 0) throw InvalidArgument("--elastic-timeout must be >= 0");
  if (o.reset_limit && *o.reset_limit < 0) throw InvalidArgument("--reset-limit must be >= 0");
  if (o.cooldown && (o.cooldown->lo.count() <= 0 || o.cooldown->hi < o.cooldown->lo)) {
    throw InvalidArgument("--blacklist-cooldown-range needs 0 < LO <= HI, got " +
                          seconds_text(o.cooldown->lo) + " and " + seconds_text(o.cooldown->hi));
  }
}

void validate(const std::vector<HostSlots>& discovered) {
  std::set<std::string> seen;
  for (const auto& h : discovered) {
    if (!net::valid_host_name(h.host))
      throw InvalidArgument("'" + h.host + "' is not a valid host");
    if (h.slots < 1 || h.slots > 4096) {
      throw InvalidArgument("host '" + h.host + "': slot count " + std::to_string(h.slots) +
                            " is not between 1 and 4096");
    }
    if (!seen.insert(h.host).second) {
      throw InvalidArgument("host '" + h.host + "' is listed twice");
    }
  }
}

// Local ranks count a host's ranks in rank order; cross ranks count the ranks that share a
// local rank, in rank order.
void number_ranks(std::vector<RoundSlot>& slots) {
  std::map<std::string, int> per_host;
  for (auto& s : slots) s.assignment.placement.local_rank = per_host[s.assignment.host]++;
  std::map<int, int> per_local_rank;
  for (auto& s : slots) {
    Placement& p = s.assignment.placement;
    p.local_size = per_host[s.assignment.host];
    p.cross_rank = per_local_rank[p.local_rank]++;
  }
  int rank = 0;
  for (auto& s : slots) {
    Placement& p = s.assignment.placement;
    p.cross_size = per_local_rank[p.local_rank];
    p.rank = rank++;
    p.size = static_cast<int>(slots.size());
  }
}

// "a:0-3,5" for slots 0, 1, 2, 3 and 5 of a, listed host by host in the given order.
std::string describe_slots(const std::vector<SlotRef>& slots) {
  std::string text;
  for (size_t i = 0; i < slots.size();) {
    size_t j = i;
    if (!text.empty()) text += ' ';
    text += slots[i].host + ":";
    while (j < slots.size() && slots[j].host == slots[i].host) {
      size_t k = j;
      while (k + 1 < slots.size() && slots[k + 1].host == slots[j].host &&
             slots[k + 1].slot == slots[k].slot + 1) {
        ++k;
      }
      if (j != i) text += ',';
      text += std::to_string(slots[j].slot);
      if (k > j) text += "-" + std::to_string(slots[k].slot);
      j = k + 1;
    }
    i = j;
  }
  return text;
}

}  // namespace

std::string SlotChanges::describe() const {
  if (empty()) return "no change";
  std::string text;
  if (!added.empty()) text = "added " + describe_slots(added);
  if (!removed.empty()) text += (text.empty() ? "" : "; ") + ("removed " + describe_slots(removed));
  return text;
}

milliseconds cooldown_after(const CooldownRange& range, int failures, double jitter) {
  double lo = static_cast<double>(range.lo.count());
  double hi = static_cast<double>(range.hi.count());
  // Past 2^40 any realistic range is clamped anyway; stopping there avoids overflow.
  double delay =
      lo * std::exp2(std::clamp(failures - 1, 0, 40)) + std::clamp(jitter, 0.0, 1.0) * lo;
  return milliseconds(static_cast<long long>(std::clamp(delay, lo, hi)));
}

ElasticHosts::ElasticHosts(ElasticHostsOptions options, NowFn now)
    : options_(std::move(options)), now_(std::move(now)) {
  validate(options_);
  last_observed_ = now_();
  short_since_ = last_observed_;  // no slots yet
}

SlotChanges ElasticHosts::update(const std::vector<HostSlots>& discovered) {
  validate(discovered);
  TimePoint now = now_();
  catch_up(now);
  std::map<std::string, HostSlots> listed;
  for (const auto& h : discovered) listed[h.host] = h;
  std::vector<std::string> began_draining;
  for (const auto& h : discovered) {
    if (h.drain && !draining(h.host)) began_draining.push_back(h.host);
  }
  std::vector<HostSlots> next;
  for (const auto& h : hosts_) {
    auto it = listed.find(h.host);
    if (it == listed.end()) {  // gone
      drained_.erase(h.host);
      continue;
    }
    next.push_back(it->second);
    listed.erase(it);
  }
  for (const auto& h : discovered) {
    if (listed.contains(h.host)) next.push_back(h);  // new, in discovery order
  }
  hosts_ = std::move(next);
  SlotChanges changes = observe(now);
  changes.drained = std::move(began_draining);
  return changes;
}

SlotChanges ElasticHosts::refresh() {
  return observe(now_());
}

SlotChanges ElasticHosts::worker_failed(const std::string& host, int slot,
                                        bool others_on_host_alive) {
  if (slot < 0) throw InvalidArgument("slot " + std::to_string(slot) + " of '" + host + "'");
  TimePoint now = now_();
  catch_up(now);
  if (!others_on_host_alive) {
    return changes_after(penalize(host_penalties_[host], now,
                                  "blacklisting host " + host + " (every worker on it has failed)"),
                         host, std::nullopt, now);
  }
  return changes_after(penalize(slot_penalties_[{host, slot}], now,
                                "retiring slot " + host + ":" + std::to_string(slot) +
                                    " (its worker failed while others on the host are alive)"),
                       host, slot, now);
}

SlotChanges ElasticHosts::launch_failed(const std::string& host) {
  TimePoint now = now_();
  catch_up(now);
  return changes_after(
      penalize(host_penalties_[host], now,
               "blacklisting host " + host + " (a worker could not be started on it)"),
      host, std::nullopt, now);
}

SlotChanges ElasticHosts::changes_after(Penalized penalized, const std::string& host,
                                        std::optional<int> slot, TimePoint now) {
  penalized.host = host;
  penalized.slot = slot;
  SlotChanges changes = observe(now);
  changes.penalized = std::move(penalized);
  return changes;
}

SlotChanges ElasticHosts::drain(const std::string& host) {
  bool fresh = !draining(host);
  drained_.insert(host);
  SlotChanges changes = observe(now_());
  if (fresh) changes.drained.push_back(host);
  return changes;
}

bool ElasticHosts::draining(const std::string& host) const {
  if (drained_.contains(host)) return true;
  return std::any_of(hosts_.begin(), hosts_.end(),
                     [&](const HostSlots& h) { return h.host == host && h.drain; });
}

Penalized ElasticHosts::penalize(Penalty& penalty, TimePoint now, const std::string& what) {
  ++penalty.failures;
  if (!options_.cooldown) {
    penalty.until = TimePoint::max();
    log::warning(what, " for good after ", failures_text(penalty.failures),
                 ": no --blacklist-cooldown-range");
    return {.failures = penalty.failures};
  }
  double jitter = options_.jitter ? options_.jitter() : 0.0;
  milliseconds delay = cooldown_after(*options_.cooldown, penalty.failures, jitter);
  penalty.until = now + delay;
  log::warning(what, " for ", seconds_text(delay), " after ", failures_text(penalty.failures));
  return {.failures = penalty.failures, .cooldown = delay};
}

RoundPlan ElasticHosts::plan_round(const std::vector<SlotRef>& survivors,
                                   bool fill_free_slots) const {
  TimePoint now = now_();
  size_t cap = options_.max_np ? static_cast<size_t>(*options_.max_np) : SIZE_MAX;
  RoundPlan plan;
  std::set<SlotRef> taken;
  for (const auto& s : survivors) {
    if (!taken.insert(s).second) {
      throw InvalidArgument("survivor " + s.host + ":" + std::to_string(s.slot) +
                            " is listed twice");
    }
    if (usable_at(s, now) && plan.slots.size() < cap) {
      plan.slots.push_back({.assignment = {.host = s.host}, .slot = s.slot, .survivor = true});
    } else {
      plan.dropped.push_back(s);
    }
  }
  for (const auto& s : fill_free_slots ? usable_list(now) : std::vector<SlotRef>{}) {
    if (plan.slots.size() >= cap) break;
    if (!taken.contains(s)) plan.slots.push_back({.assignment = {.host = s.host}, .slot = s.slot});
  }
  group_by_host(plan.slots, [](const RoundSlot& s) { return s.assignment.host; });
  number_ranks(plan.slots);
  return plan;
}

bool ElasticHosts::active(const Penalty* penalty, TimePoint t) const {
  return penalty != nullptr && penalty->failures > 0 && t < penalty->until;
}

bool ElasticHosts::blacklisted_at(const std::string& host, TimePoint t) const {
  auto it = host_penalties_.find(host);
  return active(it == host_penalties_.end() ? nullptr : &it->second, t);
}

bool ElasticHosts::blacklisted(const std::string& host) const {
  return blacklisted_at(host, now_());
}

bool ElasticHosts::usable_at(const SlotRef& slot, TimePoint t) const {
  auto host = std::find_if(hosts_.begin(), hosts_.end(),
                           [&](const HostSlots& h) { return h.host == slot.host; });
  if (host == hosts_.end() || slot.slot < 0 || slot.slot >= host->slots) return false;
  if (blacklisted_at(slot.host, t) || draining(slot.host)) return false;
  auto it = slot_penalties_.find(slot);
  return !active(it == slot_penalties_.end() ? nullptr : &it->second, t);
}

std::vector<SlotRef> ElasticHosts::usable_list(TimePoint t) const {
  std::vector<SlotRef> out;
  for (const auto& h : hosts_) {
    if (blacklisted_at(h.host, t) || draining(h.host)) continue;
    for (int slot = 0; slot < h.slots; ++slot) {
      auto it = slot_penalties_.find({h.host, slot});
      if (!active(it == slot_penalties_.end() ? nullptr : &it->second, t)) {
        out.push_back({h.host, slot});
      }
    }
  }
  return out;
}

int ElasticHosts::usable_count(TimePoint t) const {
  return static_cast<int>(usable_list(t).size());
}

std::optional<TimePoint> ElasticHosts::shortage_since(TimePoint now) const {
  // Between observations the hosts are fixed, so the usable count only changes when a
  // cooldown ends: replay those moments in order.
  std::vector<TimePoint> moments;
  auto add = [&](const Penalty& p) {
    if (p.until > last_observed_ && p.until <= now) moments.push_back(p.until);
  };
  for (const auto& [host, p] : host_penalties_) add(p);
  for (const auto& [slot, p] : slot_penalties_) add(p);
  std::sort(moments.begin(), moments.end());
  moments.push_back(now);
  std::optional<TimePoint> since = short_since_;
  for (TimePoint t : moments) {
    if (usable_count(t) >= options_.min_np) {
      since.reset();
    } else if (!since) {
      since = t;
    }
  }
  return since;
}

void ElasticHosts::catch_up(TimePoint now) {
  short_since_ = shortage_since(now);
  last_observed_ = std::max(last_observed_, now);
}

SlotChanges ElasticHosts::observe(TimePoint now) {
  catch_up(now);
  std::vector<SlotRef> current = usable_list(now);
  std::set<SlotRef> before(last_usable_.begin(), last_usable_.end());
  std::set<SlotRef> after(current.begin(), current.end());
  SlotChanges changes;
  for (const auto& s : current) {
    if (!before.contains(s)) changes.added.push_back(s);
  }
  for (const auto& s : last_usable_) {
    if (!after.contains(s)) changes.removed.push_back(s);
  }
  last_usable_ = std::move(current);
  return changes;
}

std::string ElasticHosts::describe_blacklisting(const std::string& host, TimePoint now) const {
  const Penalty& p = host_penalties_.at(host);
  std::string text = host + " (" + failures_text(p.failures) + ", ";
  if (p.until == TimePoint::max()) return text + "for good: no --blacklist-cooldown-range)";
  return text + "for another " + seconds_text(std::chrono::ceil<milliseconds>(p.until - now)) + ")";
}

std::optional<std::string> ElasticHosts::all_hosts_blacklisted() const {
  TimePoint now = now_();
  if (hosts_.empty()) return std::nullopt;  // nothing discovered: the elastic timeout applies
  std::string list;
  for (const auto& h : hosts_) {
    if (!blacklisted_at(h.host, now)) return std::nullopt;
    list += (list.empty() ? "" : ", ") + describe_blacklisting(h.host, now);
  }
  return "all hosts are blacklisted: " + list;
}

std::optional<std::string> ElasticHosts::elastic_timeout_expired() const {
  TimePoint now = now_();
  auto since = shortage_since(now);
  if (!since || now - *since < options_.elastic_timeout) return std::nullopt;
  int n = usable_count(now);
  return "only " + std::to_string(n) + (n == 1 ? " slot" : " slots") +
         " available, fewer than --min-np " + std::to_string(options_.min_np) +
         ", for more than --elastic-timeout " + seconds_text(options_.elastic_timeout);
}

std::optional<std::string> ElasticHosts::stop_reason() const {
  if (auto why = all_hosts_blacklisted()) return why;
  TimePoint now = now_();
  bool none_left = !hosts_.empty() && std::all_of(hosts_.begin(), hosts_.end(), [&](const auto& h) {
    return draining(h.host) || blacklisted_at(h.host, now);
  });
  if (none_left) return std::string("every host drains or is blacklisted");
  return elastic_timeout_expired();
}

std::optional<TimePoint> ElasticHosts::next_wakeup() const {
  TimePoint now = now_();
  std::optional<TimePoint> next;
  auto consider = [&](TimePoint t) {
    if (t > now && t != TimePoint::max() && (!next || t < *next)) next = t;
  };
  for (const auto& [host, p] : host_penalties_) consider(p.until);
  for (const auto& [slot, p] : slot_penalties_) consider(p.until);
  if (auto since = shortage_since(now)) consider(*since + options_.elastic_timeout);
  return next;
}

}  // namespace cohort::discovery
