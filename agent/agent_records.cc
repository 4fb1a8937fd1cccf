#include "agent/agent_records.h"

#include <cctype>
#include <set>
#include <sstream>

#include "base/decimal.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

constexpr std::string_view kStopWord = "stop ";

int required_number(std::string_view text, const std::string& what) {
  auto value = whole_number(text);
  if (!value) throw InvalidArgument(what + ": '" + std::string(text) + "' is not a whole number");
  return *value;
}

// The value of "name=value" in `word`; throws naming `what` when `word` is something else.
std::string_view field(std::string_view word, std::string_view name, const std::string& what) {
  if (!word.starts_with(name) || word.size() < name.size() + 1 || word[name.size()] != '=') {
    throw InvalidArgument(what + ": expected " + std::string(name) + "=..., got '" +
                          std::string(word) + "'");
  }
  return word.substr(name.size() + 1);
}

std::vector<std::string> words(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::string name_key(std::string_view node) {
  return "names/" + std::string(node);
}
std::string agent_key(std::string_view node) {
  return "agents/" + std::string(node);
}
std::string planner_key(int round) {
  return "planners/" + std::to_string(round);
}
std::string round_key(int round) {
  return "rounds/" + std::to_string(round);
}
std::string exit_key(std::string_view worker) {
  return "exits/" + std::string(worker);
}
std::string kill_key(std::string_view worker) {
  return "kills/" + std::string(worker);
}
std::string cause_key(int round) {
  return "causes/" + std::to_string(round);
}
std::string lead_key() {
  return "lead";
}

std::string format_agent_node(const AgentNode& node) {
  std::string out = "slots=" + std::to_string(node.slots) + " workers=";
  for (size_t i = 0; i < node.workers.size(); ++i) out += (i ? "," : "") + node.workers[i];
  return out;
}

AgentNode parse_agent_node(std::string_view text) {
  const std::string what = "agent record '" + std::string(text) + "'";
  auto w = words(text);
  if (w.size() != 2) throw InvalidArgument(what + ": expected 'slots=N workers=...'");
  AgentNode node;
  node.slots = required_number(field(w[0], "slots", what), what);
  if (node.slots < 1) throw InvalidArgument(what + ": a node has at least one slot");
  std::string_view list = field(w[1], "workers", what);  // empty for "workers="
  for (size_t start = 0; start < list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    if (comma == start) throw InvalidArgument(what + ": an empty worker id");
    node.workers.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  if (static_cast<int>(node.workers.size()) > node.slots) {
    throw InvalidArgument(what + ": more workers than slots");
  }
  return node;
}

std::string format_agent_round(const AgentRound& round) {
  if (round.stop) return std::string(kStopWord) + *round.stop;
  std::string out = "generation=" + std::to_string(round.generation) + "\n";
  for (const auto& m : round.members) {
    out += m.worker + " " + m.node + " " + std::to_string(m.entry) + "\n";
  }
  return out;
}

AgentRound parse_agent_round(std::string_view text) {
  AgentRound round;
  if (text.starts_with(kStopWord)) {
    round.stop = std::string(text.substr(kStopWord.size()));
    return round;
  }
  const std::string what = "round record";
  std::istringstream lines{std::string(text)};
  std::string line;
  if (!std::getline(lines, line)) throw InvalidArgument(what + ": empty");
  round.generation = required_number(field(line, "generation", what), what);
  std::set<std::string> seen;
  while (std::getline(lines, line)) {
    auto w = words(line);
    if (w.size() != 3) {
      throw InvalidArgument(what + ": line '" + line + "' is not '<worker> <node> <entry>'");
    }
    if (!seen.insert(w[0]).second) throw InvalidArgument(what + ": " + w[0] + " listed twice");
    round.members.push_back({w[0], w[1], required_number(w[2], what + " (entry of " + w[0] + ")")});
  }
  if (round.members.empty()) throw InvalidArgument(what + ": no member");
  return round;
}

std::string agent_worker_id(std::string_view node, int slot, int spawn) {
  std::string id;
  for (char ch : node) {
    bool allowed = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' ||
                   ch == ':' || ch == '-';
    id += allowed ? ch : '_';
  }
  return id + "." + std::to_string(slot) + "." + std::to_string(spawn);
}

}  // namespace cohort::discovery
