#include "base/host_port.h"

#include "base/decimal.h"

namespace cohort::net {
namespace {

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

bool valid_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253 || !alnum(host.front())) return false;
  for (char c : host) {
    if (!alnum(c) && c != '.' && c != '-' && c != '_') return false;
  }
  return true;
}

std::optional<int> parse_port(std::string_view text) {
  return parse_decimal<int>(text, kLowestPort, kHighestPort);
}

}  // namespace cohort::net
