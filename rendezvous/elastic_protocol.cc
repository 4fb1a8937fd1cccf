#include "rendezvous/elastic_protocol.h"

#include <map>
#include <sstream>

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort::rendezvous {
namespace {

constexpr std::string_view kStartWord = "start";
constexpr std::string_view kFailedWord = "failed";
constexpr std::string_view kInterruptedWord = "interrupted";
constexpr std::string_view kDrainedWord = "drained";

int parse_int(std::string_view text, std::string_view field, std::string_view whole) {
  auto value = parse_decimal<int>(text);
  if (!value) {
    throw InvalidArgument("assignment '" + std::string(whole) + "': " + std::string(field) +
                          " is not a whole number");
  }
  return *value;
}

// "a=1 b=2" -> {a: "1", b: "2"}; every field once.
std::map<std::string, std::string, std::less<>> fields_of(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InvalidArgument("assignment '" + std::string(text) + "': '" + word +
                            "' is not name=value");
    }
    if (!fields.emplace(word.substr(0, eq), word.substr(eq + 1)).second) {
      throw InvalidArgument("assignment '" + std::string(text) + "': " + word.substr(0, eq) +
                            " given twice");
    }
  }
  return fields;
}

void check_place(int index, int count, const char* index_name, std::string_view whole) {
  if (count < 1 || index < 0 || index >= count) {
    throw InvalidArgument("assignment '" + std::string(whole) + "': " + index_name + " " +
                          std::to_string(index) + " is outside [0, " + std::to_string(count) + ")");
  }
}

}  // namespace

std::string round_scope(int round) {
  return "round/" + std::to_string(round);
}

std::string checkin_key(std::string_view worker_id, int entry) {
  return "checkin/" + std::string(worker_id) + "/" + std::to_string(entry);
}

std::string assign_key(std::string_view worker_id, int entry) {
  return "assign/" + std::string(worker_id) + "/" + std::to_string(entry);
}

std::string notice_key(int generation) {
  return "notice/" + std::to_string(generation);
}

std::string abandon_key(int round) {
  return "abandon/" + std::to_string(round);
}

std::string format_checkin(const CheckIn& checkin) {
  std::string_view word = checkin.kind == CheckIn::Kind::kStart         ? kStartWord
                          : checkin.kind == CheckIn::Kind::kFailed      ? kFailedWord
                          : checkin.kind == CheckIn::Kind::kInterrupted ? kInterruptedWord
                                                                        : kDrainedWord;
  std::string text(word);
  if (!checkin.reason.empty()) text += " " + checkin.reason;
  return text;
}

CheckIn parse_checkin(std::string_view text) {
  std::string_view word = text.substr(0, text.find(' '));
  CheckIn checkin;
  if (word == kStartWord) {
    checkin.kind = CheckIn::Kind::kStart;
  } else if (word == kFailedWord) {
    checkin.kind = CheckIn::Kind::kFailed;
  } else if (word == kInterruptedWord) {
    checkin.kind = CheckIn::Kind::kInterrupted;
  } else if (word == kDrainedWord) {
    checkin.kind = CheckIn::Kind::kDrained;
  } else {
    throw InvalidArgument("check-in '" + std::string(text.substr(0, 80)) +
                          "' does not start with start, failed, interrupted or drained");
  }
  if (word.size() < text.size()) checkin.reason = std::string(text.substr(word.size() + 1));
  return checkin;
}

std::string format_assignment(const Assignment& a) {
  if (a.exit) return "exit";
  const Placement& p = a.placement;
  std::ostringstream out;
  out << "round=" << a.round << " rank=" << p.rank << " size=" << p.size
      << " local_rank=" << p.local_rank << " local_size=" << p.local_size
      << " cross_rank=" << p.cross_rank << " cross_size=" << p.cross_size
      << " generation=" << a.generation;
  return out.str();
}

Assignment parse_assignment(std::string_view text) {
  Assignment a;
  if (text == "exit") {
    a.exit = true;
    return a;
  }
  auto fields = fields_of(text);
  Placement& p = a.placement;
  std::pair<const char*, int*> wanted[] = {{"round", &a.round},
                                           {"rank", &p.rank},
                                           {"size", &p.size},
                                           {"local_rank", &p.local_rank},
                                           {"local_size", &p.local_size},
                                           {"cross_rank", &p.cross_rank},
                                           {"cross_size", &p.cross_size},
                                           {"generation", &a.generation}};
  for (auto [name, value] : wanted) {
    auto it = fields.find(name);
    if (it == fields.end()) {
      throw InvalidArgument("assignment '" + std::string(text) + "': " + name + " is missing");
    }
    *value = parse_int(it->second, name, text);
    fields.erase(it);
  }
  if (!fields.empty()) {
    throw InvalidArgument("assignment '" + std::string(text) + "': unknown field " +
                          fields.begin()->first);
  }
  check_place(p.rank, p.size, "rank", text);
  check_place(p.local_rank, p.local_size, "local_rank", text);
  check_place(p.cross_rank, p.cross_size, "cross_rank", text);
  if (a.round < 0 || a.generation < 0) {
    throw InvalidArgument("assignment '" + std::string(text) +
                          "': round and generation cannot be negative");
  }
  return a;
}

}  // namespace cohort::rendezvous
