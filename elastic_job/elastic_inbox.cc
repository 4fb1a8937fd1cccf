#include "elastic_job/elastic_inbox.h"

#include <optional>

#include "base/decimal.h"
#include "cohort/errors.h"
#include "launcher/round_board.h"
#include "rendezvous/elastic_protocol.h"

namespace cohort::discovery {
namespace {

// The worker and entry of a check-in or reset report key, as the protocol's one parser reads it
// (launcher/round_board.h); nothing for any other key, or for one that is malformed or names a
// worker that is not a number as the launcher writes it (the built-in server's workers are
// numbered: "01" names none).
std::optional<WorkerEntry> worker_entry(const std::string& key, BoardKey::Kind kind) {
  std::optional<BoardKey> parsed;
  try {
    parsed = RoundBoard::parse_key(key);
  } catch (const InvalidArgument&) {
    return std::nullopt;  // not one the launcher waits for: never filed, as before
  }
  if (!parsed || parsed->kind != kind) return std::nullopt;
  auto id = whole_number(parsed->worker);  // "01" or "-1" is no worker's id
  if (!id) return std::nullopt;
  return WorkerEntry{*id, parsed->number};
}

}  // namespace

void ElasticInbox::file(const std::string& key) {
  auto checkin = worker_entry(key, BoardKey::Kind::kCheckIn);
  auto reset = checkin ? std::nullopt : worker_entry(key, BoardKey::Kind::kResetReport);
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
