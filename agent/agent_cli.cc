#include "agent/agent_cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <limits>

#include "agent/agent_records.h"
#include "base/decimal.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"
#include "rendezvous/hmac.h"

namespace cohort::discovery {

std::pair<int, int> parse_nnodes(const std::string& text, const std::string& who) {
  std::string what = (who.empty() ? "--nnodes: '" + text + "'" : who) +
                     " is not N or MIN:MAX (whole numbers >= 1, MIN <= MAX)";
  auto number = [&](std::string_view part) {
    if (auto n = parse_decimal<int>(part, 1)) return *n;
    std::string hint = decimal_hint(part, 1, std::numeric_limits<int>::max());
    throw InvalidArgument(what + (hint.empty() ? "" : ": '" + std::string(part) + "': " + hint));
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos) return {number(text), number(text)};
  auto range = std::pair(number(std::string_view(text).substr(0, colon)),
                         number(std::string_view(text).substr(colon + 1)));
  if (range.first > range.second) throw InvalidArgument(what);
  return range;
}

bool valid_job_id(std::string_view id) {
  return !id.empty() && id.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                            std::string_view::npos;
}

// Every agent of a job must have the same secret, and nobody else.
std::string agent_secret(const char* hex) {
  std::string why = "agent mode needs COHORT_SECRET: the same " +
                    std::to_string(2 * rendezvous::kSecretSize) +
                    " hex digits for every agent of the job (e.g. from 'openssl rand -hex 32')";
  if (hex == nullptr) throw InvalidArgument(why);
  std::string secret;
  try {
    secret = rendezvous::from_hex(hex);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(why + "; " + e.what());
  }
  if (secret.size() != rendezvous::kSecretSize) throw InvalidArgument(why);
  return secret;
}

std::string default_node_address(const std::string& endpoint) {
  std::string host = endpoint.substr(endpoint.find("://") + 3);
  host = host.substr(0, host.find_first_of(":/"));
  return net::local_ipv4_towards(host);
}

AgentOptions::KillWhenPlanning parse_agent_fault(const std::string& text) {
  size_t colon = text.find(':');
  AgentOptions::KillWhenPlanning fault;
  if (colon != std::string::npos && colon + 1 < text.size()) {
    fault.marker = text.substr(colon + 1);
    if (auto round = whole_number(std::string_view(text).substr(0, colon))) {
      fault.round = *round;
      return fault;
    }
  }
  throw InvalidArgument("COHORT_FAULT_AGENT_KILL_AT: '" + text + "' is not ROUND:MARKER_FILE");
}

void maybe_die_planning(const AgentOptions& options, int round) {
  const auto& fault = options.kill_when_planning;
  if (!fault || fault->round != round) return;
  int fd = ::open(fault->marker.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return;  // another agent died here already
  ::close(fd);
  report("COHORT_FAULT_AGENT_KILL_AT: node " + options.node + " killed while planning round " +
         std::to_string(round));
  ::kill(::getpid(), SIGKILL);
}

}  // namespace cohort::discovery
