#include "elastic_job/elastic_inbox.h"

#include <charconv>
#include <optional>

#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"

namespace cohort::discovery {
namespace {

std::optional<int> number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The worker and entry of "<kind>/<id>/<entry>", if `key` is exactly what `format` makes of them
// (the protocol's own key functions: one definition of the keys).
std::optional<WorkerEntry> parse(std::string_view key,
                                 std::string (*format)(std::string_view, int)) {
  size_t first = key.find('/');
  size_t last = key.rfind('/');
  if (first == std::string_view::npos || first == last) return std::nullopt;
  auto id = number(key.substr(first + 1, last - first - 1));
  auto entry = number(key.substr(last + 1));
  if (!id || !entry || format(std::to_string(*id), *entry) != key) return std::nullopt;
  return WorkerEntry{*id, *entry};
}

}  // namespace

void ElasticInbox::file(const std::string& key) {
  auto checkin = parse(key, rendezvous::checkin_key);
  auto reset = checkin ? std::nullopt : parse(key, rendezvous::reset_report_key);
  if (!checkin && !reset && key != rendezvous::progress_key()) return;
  {
    MutexLock lock(mutex_);
    if (checkin) filed_.checkins.push_back(*checkin);
    if (reset) filed_.resets.push_back(*reset);
  }
  wake_.signal();
}

Arrivals ElasticInbox::take() {
  wake_.drain();  // before taking: a key filed in between wakes the loop again
  MutexLock lock(mutex_);
  return std::exchange(filed_, {});
}

}  // namespace cohort::discovery
