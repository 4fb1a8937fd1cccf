#include "agent/agent_name.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "agent/agent_records.h"
#include "base/decimal.h"
#include "cohort/errors.h"
#include "launcher/clock.h"
#include "launcher/job_report.h"
#include "launcher/seconds_text.h"

namespace cohort::discovery {
namespace {

// The words of `text` between the separators of keys and records ("exits/<id>",
// "workers=<id>,<id>", "<id> <node> <entry>"): every worker id the text names, and more.
template <typename Each>
void for_each_word(std::string_view text, Each each) {
  constexpr std::string_view kSeparators = "/ \n,=";
  for (size_t start = 0; start < text.size();) {
    size_t end = std::min(text.find_first_of(kSeparators, start), text.size());
    if (end > start) each(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

void claim_node_name(rendezvous::EtcdStore& store, const AgentOptions& options, int64_t lease) {
  auto patience = options.lease_ttl + std::chrono::seconds(1);  // the predecessor's lease, and more
  auto deadline = steady_now() + patience;
  std::string key = name_key(options.node);
  for (bool waiting = false; !store.create(key, std::to_string(::getpid()), lease);
       waiting = true) {
    if (!waiting) {
      announce("node name '" + options.node + "' is held by another agent of job '" +
               options.job_id + "'; waiting up to " + seconds_text(patience) +
               " for its etcd lease to expire (a restarted agent's predecessor)");
    }
    auto listing = store.list(key);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_now());
    if (left.count() <= 0 || !store.wait_for_change(key, listing.revision, left)) {
      throw InvalidArgument("node name '" + options.node +
                            "' is held by another live agent of job '" + options.job_id +
                            "' (give each agent its own --node-name)");
    }
  }
}

std::map<int, int> first_spawns(const std::map<std::string, std::string>& values,
                                const std::string& node) {
  std::string stem = agent_worker_id(node, 0, 0);
  stem.resize(stem.size() - 3);  // "<node>.": the ids of this node are "<node>.<slot>.<spawn>"
  std::map<int, int> first;
  auto consider = [&](std::string_view word) {
    if (!word.starts_with(stem)) return;
    word.remove_prefix(stem.size());
    size_t dot = word.find('.');
    if (dot == std::string_view::npos) return;
    auto slot = whole_number(word.substr(0, dot));
    auto spawn = whole_number(word.substr(dot + 1));
    if (slot && spawn) first[*slot] = std::max(first[*slot], *spawn + 1);
  };
  for (const auto& [key, value] : values) {
    for_each_word(key, consider);
    for_each_word(value, consider);
  }
  return first;
}

}  // namespace cohort::discovery
