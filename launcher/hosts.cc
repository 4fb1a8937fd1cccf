#include "launcher/hosts.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <sstream>

#include "base/decimal.h"
#include "base/host_port.h"
#include "base/net.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

HostSlots checked_host(std::string_view host, int slots, const std::string& context) {
  if (!net::valid_host_name(host)) {
    throw InvalidArgument(context + ": '" + std::string(host) + "' is not a valid host name");
  }
  return {std::string(host), slots};
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

int parse_slots(std::string_view text, const std::string& context) {
  if (auto slots = parse_decimal<int>(text, 1, 4096)) return *slots;
  std::string hint = decimal_hint(text, 1, 4096);
  throw InvalidArgument(context + ": slot count '" + std::string(text) +
                        "' is not a whole number between 1 and 4096" +
                        (hint.empty() ? "" : " (" + hint + ")"));
}

std::vector<HostSlots> parse_host_list(std::string_view text) {
  std::vector<HostSlots> hosts;
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    std::string context = "host list entry '" + std::string(item) + "'";
    size_t colon = item.find(':');
    int slots = colon == std::string_view::npos ? 1 : parse_slots(item.substr(colon + 1), context);
    hosts.push_back(checked_host(item.substr(0, colon), slots, context));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return hosts;
}

std::vector<HostSlots> parse_hostfile_text(std::string_view text, const std::string& origin) {
  std::vector<HostSlots> hosts;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::string_view content = trim(std::string_view(line).substr(0, line.find('#')));
    if (content.empty()) continue;
    std::string context = origin + ":" + std::to_string(number);
    std::istringstream words{std::string(content)};
    std::string host, option, extra;
    words >> host >> option >> extra;
    if (!extra.empty())
      throw InvalidArgument(context + ": expected 'host slots=N', got '" + std::string(content) +
                            "'");
    int slots = 1;
    if (!option.empty()) {
      if (option.rfind("slots=", 0) != 0) {
        throw InvalidArgument(context + ": expected 'slots=N' after the host, got '" + option +
                              "'");
      }
      slots = parse_slots(std::string_view(option).substr(6), context);
    }
    hosts.push_back(checked_host(host, slots, context));
  }
  if (hosts.empty()) throw InvalidArgument(origin + ": the hostfile names no hosts");
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::string text;
  try {
    text = files::read_bounded(path, kHostfileRule);
  } catch (const Error& e) {
    throw InvalidArgument(e.what());
  }
  return parse_hostfile_text(text, path);
}

std::vector<SlotAssignment> assign_slots(const std::vector<HostSlots>& hosts, int np) {
  int total = 0;
  for (const auto& h : hosts) total += h.slots;
  if (np < 1) throw InvalidArgument("-np must be at least 1, got " + std::to_string(np));
  if (np > total) {
    throw InvalidArgument("-np " + std::to_string(np) + " needs " + std::to_string(np) +
                          " slots but the hosts offer only " + std::to_string(total));
  }
  std::vector<SlotAssignment> out;
  for (const auto& h : hosts) {
    int used = std::min(h.slots, np - static_cast<int>(out.size()));
    for (int local = 0; local < used; ++local) {
      out.push_back({.host = h.host,
                     .placement = {.rank = static_cast<int>(out.size()),
                                   .size = np,
                                   .local_rank = local,
                                   .local_size = used}});
    }
  }
  std::map<int, int> per_local_rank;
  for (auto& a : out) a.placement.cross_rank = per_local_rank[a.placement.local_rank]++;
  for (auto& a : out) a.placement.cross_size = per_local_rank[a.placement.local_rank];
  return out;
}

bool is_local_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr addr{};
  // Any IPv4 loopback address (127.0.0.0/8), written as an address, not a name.
  if (inet_pton(AF_INET, host.c_str(), &addr) == 1) return (ntohl(addr.s_addr) >> 24) == 127;
  return host == net::local_host_name();
}

}  // namespace cohort::discovery
