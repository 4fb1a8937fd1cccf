// The launcher's side of the elastic protocol (rendezvous/elastic_protocol.h), over a Store that
// sees the protocol's scope ("elastic"): it reads the workers' check-ins and reports and writes
// their assignments, the host notices and the abandoned rounds. Both elastic modes use it: the
// elastic job over its built-in server's store (elastic_job/), the agents over their job's etcd
// store (agent/, through rendezvous/scoped_store.h). The launcher decides; this is where its
// decisions meet the keys. A launcher that reads the scope in one listing rather than key by key
// (agent mode) names what each listed key is with parse_key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/elastic_protocol.h"
#include "rendezvous/store.h"
#include "rendezvous/worker_reports.h"

namespace cohort::discovery {

// A key of the elastic protocol, relative to its scope.
struct BoardKey {
  enum class Kind { kCheckIn, kAssignment, kNotice, kAbandon, kProgress, kResetReport };
  Kind kind = Kind::kCheckIn;
  std::string worker;  // kCheckIn, kAssignment, kResetReport: the worker's id
  // kCheckIn, kAssignment, kResetReport: the entry; kNotice: the generation; kAbandon: the round.
  int number = 0;
};

class RoundBoard {
 public:
  // `store` (the elastic scope) must outlive the board.
  explicit RoundBoard(rendezvous::Store& store) : store_(store) {}

  // Worker `id`'s check-in for `entry`, once it made one. One that cannot be read is logged
  // (naming `who`) and taken for a failed collective: the worker is alive and left its round.
  std::optional<rendezvous::CheckIn> checkin(int id, int entry, const std::string& who);
  // Worker `id`'s answer for `entry`: a place in a round, or "exit".
  void assign(int id, int entry, const rendezvous::Assignment& assignment);
  void assign(std::string_view worker, int entry, const rendezvous::Assignment& assignment);
  void tell_exit(int id, int entry);
  void tell_exit(std::string_view worker, int entry);
  // Host notice `generation` (saying `why`), unless it is set already: members polling at their
  // commits learn the hosts changed.
  void notice(int generation, const std::string& why = "");
  // Ends the waits of members still joining `round` (their round watch), with `why`.
  void abandon(int round, const std::string& why);
  // The texts of the workers' reports (rendezvous/worker_reports.h), once made; the launcher's
  // WorkerReportLog (launcher/worker_report_log.h) reads them.
  std::optional<std::string> progress();
  std::optional<std::string> reset_report(int id, int entry);

  // What `key` (relative to the elastic scope) is; nothing for a key that is not the protocol's.
  // Throws InvalidArgument naming what is wrong for one that looks like the protocol's but is
  // malformed ("checkin/w3" without its entry).
  static std::optional<BoardKey> parse_key(std::string_view key);

 private:
  rendezvous::Store& store_;
};

}  // namespace cohort::discovery
