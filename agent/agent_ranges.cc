#include "agent/agent_ranges.h"

#include <algorithm>

#include "agent/agent_records.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"

namespace cohort::discovery {
namespace {

using rendezvous::KeyRange;

std::string elastic(const std::string& key) {
  return std::string(rendezvous::kElasticScope) + "/" + key;
}

// What every worker id of `node` starts with (agent_worker_id): "<node>.".
std::string worker_prefix(const std::string& node) {
  std::string id = agent_worker_id(node, 0, 0);
  return id.substr(0, id.size() - 3);
}

// Whether one of `ranges` holds every key that starts with `prefix`.
bool holds_every_key_under(const KeyRanges& ranges, const std::string& prefix) {
  KeyRange all = KeyRange::under(prefix);
  return std::any_of(ranges.begin(), ranges.end(), [&](const KeyRange& r) {
    return r.contains(all.begin) && (r.end.empty() || r.end >= all.end);
  });
}

}  // namespace

KeyRanges planner_ranges() {
  return {KeyRange::under("")};
}

KeyRanges follower_ranges(const std::string& node) {
  std::string workers = worker_prefix(node);
  // Keys sort: agents/ < causes/ < elastic/ < exits/ < job < kills/ < lead < names/ < planners/
  // < rounds/.
  return {KeyRange::only(agent_key(node)),
          KeyRange::under("causes/"),
          KeyRange::under(elastic("checkin/" + workers)),
          KeyRange::under(elastic("notice/")),
          KeyRange::only(elastic(rendezvous::progress_key())),
          KeyRange::under(elastic("reset/" + workers)),
          {"exits/", "names/"},
          KeyRange::only(name_key(node)),
          {"planners/", ""}};
}

KeyRanges startup_ranges(const std::string& node) {
  KeyRanges ranges = follower_ranges(node);
  ranges.push_back(KeyRange::under(elastic("assign/" + worker_prefix(node))));
  return ranges;
}

bool holds_every_checkin(const KeyRanges& ranges) {
  return holds_every_key_under(ranges, elastic("checkin/"));
}

bool holds_every_node(const KeyRanges& ranges) {
  return holds_every_key_under(ranges, "agents/");
}

bool plans_rounds(const std::optional<std::string>& lead, const std::string& node, bool planning) {
  return planning || lead == node;
}

}  // namespace cohort::discovery
