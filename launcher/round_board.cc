#include "launcher/round_board.h"

#include "base/decimal.h"
#include "base/log.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

using Kind = BoardKey::Kind;

// The key that `parsed` names, built by the protocol's own functions: a parsed key must read
// back as itself, so that the parser cannot drift from them.
std::string key_of(const BoardKey& parsed) {
  switch (parsed.kind) {
    case Kind::kCheckIn:
      return rendezvous::checkin_key(parsed.worker, parsed.number);
    case Kind::kAssignment:
      return rendezvous::assign_key(parsed.worker, parsed.number);
    case Kind::kNotice:
      return rendezvous::notice_key(parsed.number);
    case Kind::kAbandon:
      return rendezvous::abandon_key(parsed.number);
    case Kind::kProgress:
      return rendezvous::progress_key();
    case Kind::kResetReport:
      return rendezvous::reset_report_key(parsed.worker, parsed.number);
  }
  return "";
}

std::optional<Kind> kind_of(std::string_view first) {
  if (first == "checkin") return Kind::kCheckIn;
  if (first == "assign") return Kind::kAssignment;
  if (first == "notice") return Kind::kNotice;
  if (first == "abandon") return Kind::kAbandon;
  if (first == "reset") return Kind::kResetReport;
  return std::nullopt;
}

}  // namespace

std::optional<rendezvous::CheckIn> RoundBoard::checkin(int id, int entry, const std::string& who) {
  auto text = store_.lookup(rendezvous::checkin_key(std::to_string(id), entry));
  if (!text) return std::nullopt;
  try {
    return rendezvous::parse_checkin(*text);
  } catch (const InvalidArgument& e) {
    log::warning(who, " sent a check-in cohortrun does not understand (", e.what(),
                 "); taking it for a failed collective");
    return rendezvous::CheckIn{rendezvous::CheckIn::Kind::kFailed, "unreadable check-in"};
  }
}

void RoundBoard::assign(int id, int entry, const rendezvous::Assignment& assignment) {
  assign(std::to_string(id), entry, assignment);
}

void RoundBoard::assign(std::string_view worker, int entry,
                        const rendezvous::Assignment& assignment) {
  store_.set(rendezvous::assign_key(worker, entry), rendezvous::format_assignment(assignment));
}

void RoundBoard::tell_exit(int id, int entry) {
  tell_exit(std::to_string(id), entry);
}

void RoundBoard::tell_exit(std::string_view worker, int entry) {
  assign(worker, entry, {.exit = true});
}

void RoundBoard::notice(int generation, const std::string& why) {
  store_.compare_and_set(rendezvous::notice_key(generation), std::nullopt, why);
}

void RoundBoard::abandon(int round, const std::string& why) {
  store_.set(rendezvous::abandon_key(round), why);
}

std::optional<std::string> RoundBoard::progress() {
  return store_.lookup(rendezvous::progress_key());
}

std::optional<std::string> RoundBoard::reset_report(int id, int entry) {
  return store_.lookup(rendezvous::reset_report_key(std::to_string(id), entry));
}

std::optional<BoardKey> RoundBoard::parse_key(std::string_view key) {
  if (key == rendezvous::progress_key()) return BoardKey{.kind = Kind::kProgress};
  size_t slash = key.find('/');
  auto kind = kind_of(key.substr(0, slash));
  if (!kind || slash == std::string_view::npos) return std::nullopt;
  std::string_view rest = key.substr(slash + 1);
  BoardKey parsed{.kind = *kind};
  bool per_worker =
      *kind == Kind::kCheckIn || *kind == Kind::kAssignment || *kind == Kind::kResetReport;
  size_t last = per_worker ? rest.rfind('/') : std::string_view::npos;
  if (per_worker && (last == std::string_view::npos || last == 0)) {
    throw InvalidArgument("'" + std::string(key) + "' is not " + std::string(key.substr(0, slash)) +
                          "/<worker>/<entry>");
  }
  if (per_worker) parsed.worker = std::string(rest.substr(0, last));
  auto number = whole_number(per_worker ? rest.substr(last + 1) : rest);
  if (!number) throw InvalidArgument("'" + std::string(key) + "' does not end in a number");
  parsed.number = *number;
  if (key_of(parsed) != key) {
    throw InvalidArgument("'" + std::string(key) + "' is not a key of the elastic protocol");
  }
  return parsed;
}

}  // namespace cohort::discovery
