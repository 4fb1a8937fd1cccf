// The whole numbers >= 0 that the launcher reads from text: rank ranges, the numbers in the
// agents' keys and records, and the agents' and operators' settings. Moved here from the agents'
// records (agent/agent_records.h) so that the shared launcher parts need not include the agent.
#pragma once

#include <optional>
#include <string_view>

namespace cohort::discovery {

// The whole number >= 0 that is all of `text`, or nothing: the numbers in keys, records and the
// agents' settings.
std::optional<int> whole_number(std::string_view text);

}  // namespace cohort::discovery
