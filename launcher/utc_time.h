// Wall-clock time as the launcher writes it for people and machines: "2026-11-25T01:40:00.123Z"
// (UTC, milliseconds, sorts as text). The output prefixes and the event log use it.
#pragma once

#include <string>

namespace cohort::discovery {

std::string utc_timestamp();

}  // namespace cohort::discovery
