#include "rendezvous/worker_reports.h"

#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort::rendezvous {
namespace {

// The fields of `text` ("name=value ..."): exactly `names`, and either all of `optional` or
// none, each a whole number >= 0.
std::map<std::string, uint64_t> numbers_of(std::string_view text,
                                           const std::vector<const char*>& names, const char* what,
                                           const std::vector<const char*>& optional = {}) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument(std::string(what) + " '" + std::string(text.substr(0, 200)) +
                           "': " + why);
  };
  std::map<std::string, uint64_t> fields;
  std::istringstream in{std::string(text)};
  for (std::string word; in >> word;) {
    auto eq = word.find('=');
    if (eq == std::string::npos || eq + 1 == word.size())
      throw bad("'" + word + "' is not name=number");
    auto value = parse_decimal<uint64_t>(std::string_view(word).substr(eq + 1));
    if (!value) throw bad("'" + word + "' is not name=number");
    if (!fields.emplace(word.substr(0, eq), *value).second)
      throw bad(word.substr(0, eq) + " twice");
  }
  for (const char* name : names) {
    if (!fields.contains(name)) throw bad(std::string("no ") + name);
  }
  size_t present = 0;
  for (const char* name : optional) present += fields.contains(name) ? 1 : 0;
  if (present != 0 && present != optional.size()) {
    throw bad(std::string("'") + optional[0] +
              "' and the fields that go with it, not some of them");
  }
  if (fields.size() != names.size() + present) throw bad("unknown fields");
  return fields;
}

int small(uint64_t v, std::string_view text) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    throw InvalidArgument("reset report '" + std::string(text.substr(0, 200)) +
                          "': " + std::to_string(v) + " is too large");
  }
  return static_cast<int>(v);
}

}  // namespace

std::string progress_key() {
  return "progress";
}

std::string reset_report_key(std::string_view worker_id, int entry) {
  return "reset/" + std::string(worker_id) + "/" + std::to_string(entry);
}

std::string format_progress(const Progress& p) {
  std::string out =
      "commits=" + std::to_string(p.commits) + " samples=" + std::to_string(p.samples);
  if (p.restores > 0) {
    out += " restores=" + std::to_string(p.restores) +
           " restored_sequence=" + std::to_string(p.restored_sequence) +
           " restored_commit=" + std::to_string(p.restored_commit);
  }
  return out;
}

Progress parse_progress(std::string_view text) {
  auto f = numbers_of(text, {"commits", "samples"}, "progress",
                      {"restores", "restored_sequence", "restored_commit"});
  if (f.contains("restores") && f["restores"] == 0) {
    throw InvalidArgument("progress '" + std::string(text.substr(0, 200)) +
                          "': restores=0 with a restored checkpoint");
  }
  return {f["commits"], f["samples"], f["restores"], f["restored_sequence"], f["restored_commit"]};
}

std::string format_reset_report(const ResetReport& r) {
  std::ostringstream out;
  out << "round=" << r.round << " old_rank=" << r.old_rank << " old_size=" << r.old_size
      << " new_rank=" << r.new_rank << " new_size=" << r.new_size
      << " teardown_us=" << r.teardown_us << " assignment_us=" << r.assignment_us
      << " connect_us=" << r.connect_us;
  return out.str();
}

ResetReport parse_reset_report(std::string_view text) {
  auto f = numbers_of(text,
                      {"round", "old_rank", "old_size", "new_rank", "new_size", "teardown_us",
                       "assignment_us", "connect_us"},
                      "reset report");
  return {.round = small(f["round"], text),
          .old_rank = small(f["old_rank"], text),
          .old_size = small(f["old_size"], text),
          .new_rank = small(f["new_rank"], text),
          .new_size = small(f["new_size"], text),
          .teardown_us = f["teardown_us"],
          .assignment_us = f["assignment_us"],
          .connect_us = f["connect_us"]};
}

}  // namespace cohort::rendezvous
