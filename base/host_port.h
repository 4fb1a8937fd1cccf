// Host names and TCP ports as every flag, variable, hostfile and URL of the project gives them,
// checked by one rule before anything is started (docs/cohortrun.md, "Placement";
// docs/kubernetes.md): a host is a name or a dotted IPv4 address, a port a number from 1 to 65535
// in the decimal grammar of base/decimal.h. IPv6 is not supported: the workers and the launcher
// listen on IPv4 only.
#pragma once

#include <optional>
#include <string_view>

namespace cohort::net {

// Letters, digits, '.', '-' and '_', starting with a letter or digit (so that a name can never be
// taken for an option by ssh), at most 253 characters.
bool valid_host_name(std::string_view host);

inline constexpr int kLowestPort = 1;
inline constexpr int kHighestPort = 65535;

// The port that all of `text` spells, from 1 to 65535; nothing otherwise.
std::optional<int> parse_port(std::string_view text);

}  // namespace cohort::net
