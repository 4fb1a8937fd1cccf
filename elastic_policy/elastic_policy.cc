#include "elastic_policy/elastic_policy.h"

#include <algorithm>

#include "launcher/seconds_text.h"

namespace cohort::elastic_policy {

int round_size_needed(int min_size, bool a_worker_finished) {
  return a_worker_finished ? 1 : min_size;
}

bool reset_limit_exceeded(int resets, std::optional<int> reset_limit) {
  return reset_limit && resets > *reset_limit;
}

std::optional<std::chrono::milliseconds> penalty_after(const std::optional<CooldownRange>& range,
                                                       int failures, double jitter) {
  if (!range) return std::nullopt;
  return discovery::cooldown_after(*range, failures, jitter);
}

TimePoint start_due(TimePoint started, std::chrono::milliseconds start_timeout) {
  return started + start_timeout;
}

std::optional<std::string> start_overdue(TimePoint due, bool checked_in,
                                         std::chrono::milliseconds start_timeout, TimePoint now) {
  if (checked_in || now < due) return std::nullopt;
  return "did not check in within --start-timeout " + discovery::seconds_text(start_timeout) +
         "; taking it for failed and killing it";
}

ElasticPolicy::ElasticPolicy(ElasticHostsOptions options, NowFn now)
    : min_np_(options.min_np),
      reset_limit_(options.reset_limit),
      now_(now),
      hosts_(options, now),
      hold_(options.min_np, options.elastic_timeout, now) {}

SlotChanges ElasticPolicy::fixed_hosts(const std::vector<HostSlots>& hosts) {
  return hosts_.update(hosts);
}

SlotChanges ElasticPolicy::discovered(const std::vector<HostSlots>& listed,
                                      const std::function<bool(const std::string& host)>& running) {
  return hosts_.update(hold_.apply(listed, hosts_, running));
}

DiscoveryNote ElasticPolicy::discovery_failed(const std::string& error) {
  DiscoveryNote note{.report_failure = error != last_discovery_error_};
  last_discovery_error_ = error;
  return note;
}

DiscoveryNote ElasticPolicy::discovery_worked() {
  DiscoveryNote note{.report_recovery = !last_discovery_error_.empty()};
  last_discovery_error_.clear();
  return note;
}

SlotChanges ElasticPolicy::worker_failed(const std::string& host, int slot,
                                         bool others_on_host_alive) {
  return hosts_.worker_failed(host, slot, others_on_host_alive);
}

SlotChanges ElasticPolicy::launch_failed(const std::string& host) {
  return hosts_.launch_failed(host);
}

SlotChanges ElasticPolicy::drained(const std::string& host) {
  return hosts_.drain(host);
}

std::optional<std::string> ElasticPolicy::reset_stop() const {
  if (!reset_limit_exceeded(resets_, reset_limit_)) return std::nullopt;
  return "the job reset " + std::to_string(resets_) + " times, more than --reset-limit " +
         std::to_string(*reset_limit_);
}

std::optional<std::string> ElasticPolicy::stop_reason() const {
  if (auto why = hosts_.stop_reason()) return why;
  return reset_stop();
}

std::optional<std::string> ElasticPolicy::hold_expired() const {
  return hold_.expired(now_());
}

std::vector<SlotRef> ElasticPolicy::slots_to_start(const std::vector<SlotRef>& alive) const {
  std::vector<SlotRef> out;
  if (finishing_) return out;
  for (const auto& slot : hosts_.plan_round(alive).slots) {
    if (!slot.survivor) out.push_back({slot.assignment.host, slot.slot});
  }
  return out;
}

RoundDecision ElasticPolicy::decide_round(const std::vector<SlotRef>& wanted, bool all_checked_in) {
  if (wanted.empty() || !all_checked_in) return {};
  // Survivors only: every free slot already has a worker starting (slots_to_start).
  RoundPlan plan = hosts_.plan_round(wanted, /*fill_free_slots=*/false);
  // Fewer than --min-np: wait (the elastic timeout bounds it), unless the job is finishing and
  // only the rest of its last round is left.
  if (static_cast<int>(plan.slots.size()) < round_size_needed(min_np_, finishing_)) return {};
  if (round_ >= 0) {
    ++resets_;
    if (auto why = reset_stop()) return {.kind = RoundDecision::Kind::kStop, .why = *why};
  }
  return {.kind = RoundDecision::Kind::kForm, .plan = std::move(plan), .round = ++round_};
}

bool ElasticPolicy::job_done(bool members_finished, bool any_running) const {
  return (round_ >= 0 && members_finished) || (finishing_ && !any_running);
}

std::optional<TimePoint> ElasticPolicy::next_wakeup() const {
  std::optional<TimePoint> next = hosts_.next_wakeup();
  if (auto held = hold_.deadline(); held && (!next || *held < *next)) next = held;
  return next;
}

}  // namespace cohort::elastic_policy
