#include "core/agreement.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cohort/errors.h"
#include "core/backend_factory.h"
#include "core/config_table.h"
#include "core/leader.h"

namespace cohort {
namespace {

// A record longer than this comes from no Cohort's table: refused rather than gathered.
constexpr uint64_t kMaxRecord = 1 << 16;
// What a rank whose Cohort lacks a setting holds for it.
constexpr std::string_view kUnknown = "(not a setting of this rank's Cohort)";

// FNV-1a: the same digest on every rank and every build.
uint64_t digest(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A record's lines as (name, value), in its order.
using Values = std::vector<std::pair<std::string, std::string>>;

const std::string* value_of(const Values& values, const std::string& name) {
  for (const auto& [n, v] : values) {
    if (n == name) return &v;
  }
  return nullptr;
}

Values parse_record(std::string_view record) {
  Values values;
  while (!record.empty()) {
    auto end = std::min(record.find('\n'), record.size());
    auto line = record.substr(0, end);
    auto equals = line.find('=');
    if (equals != std::string_view::npos) {
      values.emplace_back(line.substr(0, equals), line.substr(equals + 1));
    }
    record.remove_prefix(std::min(end + 1, record.size()));
  }
  return values;
}

// The names in every record, in the order the first rank holding each lists them.
std::vector<std::string> names_in(std::span<const std::string> records) {
  std::vector<std::string> names;
  for (const auto& record : records) {
    for (const auto& line : parse_record(record)) {
      if (std::find(names.begin(), names.end(), line.first) == names.end()) {
        names.push_back(line.first);
      }
    }
  }
  return names;
}

// "'1' on rank 2 (host b), 'auto' on ranks 0 to 1 (host a)".
std::string sides(const std::string& name, std::span<const Values> by_rank,
                  std::span<const std::string> hosts) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    const std::string* held = value_of(by_rank[r], name);
    std::string value = held ? "'" + *held + "'" : std::string(kUnknown);
    auto group =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
    if (group == groups.end()) group = groups.insert(groups.end(), {value, {}});
    group->second.push_back(static_cast<int>(r));
  }
  if (groups.size() == 1) return "";
  std::string text;
  for (const auto& [value, ranks] : groups) {
    std::vector<std::string> on;
    for (int r : ranks) {
      if (std::find(on.begin(), on.end(), hosts[r]) == on.end()) on.push_back(hosts[r]);
    }
    std::string where = on.size() == 1 ? "host " : "hosts ";
    for (size_t i = 0; i < on.size(); ++i) where += (i ? ", " : "") + on[i];
    text +=
        (text.empty() ? "" : ", ") + value + " on " + describe_ranks(ranks) + " (" + where + ")";
  }
  return name + ": " + text;
}

}  // namespace

std::string alike_settings(const Config& config) {
  std::string record;
  for (const auto& setting : config_table::settings()) {
    if (setting.scope != config_table::Scope::kAlike) continue;
    record += std::string(setting.name) + "=" + config_table::show(setting, config) + "\n";
  }
  return record;
}

std::string describe_disagreement(std::span<const std::string> records,
                                  std::span<const std::string> hosts) {
  std::vector<Values> by_rank;
  for (const auto& record : records) by_rank.push_back(parse_record(record));
  std::string differences;
  for (const auto& name : names_in(records)) {
    auto part = sides(name, by_rank, hosts);
    if (!part.empty()) differences += (differences.empty() ? "" : "; ") + part;
  }
  if (differences.empty()) return "";
  return "the ranks hold different values of settings that every rank must hold alike "
         "(docs/environment.md): " +
         differences;
}

void check_agreement(ops::Backend& world, const Config& config) {
  auto size = static_cast<size_t>(world.size());
  if (size == 1) return;
  std::string mine = alike_settings(config);
  std::array<uint64_t, 2> summary{digest(mine), mine.size()};
  std::vector<uint64_t> all(2 * size);
  std::vector<size_t> counts(size, sizeof summary);
  world.allgatherv(summary.data(), all.data(), counts);
  bool alike = true;
  for (size_t r = 0; r < size; ++r)
    alike = alike && all[2 * r] == all[0] && all[2 * r + 1] == all[1];
  if (alike) return;
  std::vector<size_t> lengths(size);
  for (size_t r = 0; r < size; ++r) {
    if (all[2 * r + 1] > kMaxRecord) {
      throw InvalidArgument("rank " + std::to_string(r) + "'s Cohort sent a settings record of " +
                            std::to_string(all[2 * r + 1]) + " bytes: not a Cohort of this kind");
    }
    lengths[r] = all[2 * r + 1];
  }
  std::string joined(std::accumulate(lengths.begin(), lengths.end(), size_t{0}), '\0');
  world.allgatherv(mine.data(), joined.data(), lengths);
  std::vector<std::string> records;
  for (size_t r = 0, at = 0; r < size; at += lengths[r++])
    records.push_back(joined.substr(at, lengths[r]));
  auto hosts = host_names(world, config);
  auto error = describe_disagreement(records, hosts);
  if (!error.empty()) throw InvalidArgument(error);
}

}  // namespace cohort
