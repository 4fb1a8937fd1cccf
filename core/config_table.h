// The table of Config's settings: one row per COHORT_* tunable with the kind of value it takes,
// the Config member it fills and a line of doc. Config::from walks it, and cohort_env_table prints
// it for the check of docs/environment.md. A row's default is its member's in a default Config.
// The variables through which a launcher places a worker (base/launch_env.h) are not here: they
// depend on one another, and core/config.cc reads them together.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "base/env_value.h"
#include "base/log.h"
#include "core/config.h"
#include "core/fault_injection.h"

namespace cohort::config_table {

// A duration written as `rule` says (base/env_value.h), held in `Rep`.
template <class Rep>
struct Duration {
  Rep Config::*member;
  env::DurationRule rule;
};

// A whole number from `lo` to `hi`.
struct Count {
  size_t Config::*member;
  long long lo;
  long long hi;
};

// 0 or 1; 1 sets the member to false (a check that is on unless disabled).
struct Disable {
  bool Config::*enabled;
};

// 0 or 1; 1 sets the member to true (a feature that is off unless enabled).
struct Enable {
  bool Config::*enabled;
};

// Any text; unset leaves the member empty.
struct Text {
  std::string Config::*member;
};

// A value read by `parse`, which throws InvalidArgument saying what is allowed (the walk adds the
// variable's name and value); `show` writes it back for the table, "unset" for none.
template <class T>
struct Parsed {
  T Config::*member;
  T (*parse)(std::string_view text);
  std::string (*show)(const T& value);
};

using Field =
    std::variant<Duration<std::chrono::milliseconds>, Duration<std::chrono::microseconds>, Count,
                 Disable, Enable, Text, Parsed<Config::CpuOperations>, Parsed<Config::Hierarchy>,
                 Parsed<ops::DeviceOperations>, Parsed<log::Level>,
                 Parsed<std::optional<FaultPoint>>, Parsed<std::chrono::seconds>>;

// Whether every rank of a job must hold the same value: the settings that change the wire
// protocol, the topology or which collectives init() and the collectives run (core/agreement.h).
enum class Scope { kRank, kAlike };

struct Setting {
  const char* name;
  Field field;
  const char* doc;  // one line
  Scope scope = Scope::kRank;
};

std::span<const Setting> settings();

// Sets the row's member of `config` from `value`. Throws InvalidArgument naming the variable,
// the value and what is allowed.
void apply(const Setting& setting, const std::string& value, Config& config);

// The row's member of `config`, written as the variable would set it; "unset" where empty.
std::string show(const Setting& setting, const Config& config);

}  // namespace cohort::config_table
