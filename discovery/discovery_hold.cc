#include "discovery/discovery_hold.h"

#include <algorithm>

#include "launcher/job_report.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {

std::vector<HostSlots> DiscoveryHold::apply(
    const std::vector<HostSlots>& listed, const ElasticHosts& hosts,
    const std::function<bool(const std::string& host)>& running) {
  int offered = 0;
  for (const auto& h : listed) offered += hosts.blacklisted(h.host) ? 0 : h.slots;
  std::vector<HostSlots> kept = listed;
  if (offered < min_np_) {
    for (const auto& h : hosts.hosts()) {
      bool listed_now = std::any_of(listed.begin(), listed.end(),
                                    [&](const HostSlots& l) { return l.host == h.host; });
      if (!listed_now && running(h.host)) kept.push_back(h);
    }
  }
  bool holding = kept.size() > listed.size();
  if (holding && !held_since_) {
    held_since_ = now_();
    announce("the host discovery script lists " + std::to_string(offered) +
             " usable slots, fewer than --min-np " + std::to_string(min_np_) +
             "; keeping the running workers' hosts for up to --elastic-timeout " +
             seconds_text(elastic_timeout_) + " while hosts return");
  } else if (!holding && held_since_) {
    held_since_.reset();
    announce("the host discovery script lists enough slots again");
  }
  return kept;
}

std::optional<TimePoint> DiscoveryHold::deadline() const {
  if (!held_since_) return std::nullopt;
  return *held_since_ + elastic_timeout_;
}

std::optional<std::string> DiscoveryHold::expired(TimePoint now) const {
  if (!held_since_ || now < *held_since_ + elastic_timeout_) return std::nullopt;
  return "the host discovery script has listed fewer than --min-np " + std::to_string(min_np_) +
         " slots for --elastic-timeout " + seconds_text(elastic_timeout_);
}

}  // namespace cohort::discovery
