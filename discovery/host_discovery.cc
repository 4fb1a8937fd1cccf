#include "discovery/host_discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/host_port.h"
#include "cohort/errors.h"

namespace cohort::discovery {
namespace {

// The text of a bad line as the user should see it: escaped, and short even if the line is not.
std::string quoted_text(std::string_view text) {
  return "'" + excerpt(std::string(text), 200, false) + "'";
}

int line_slots(std::string_view text, const std::string& context) {
  bool digits = !text.empty() && text.size() <= 9 &&
                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    throw InvalidArgument(context + ": slot count " + quoted_text(text) +
                          " is not a whole number between 1 and 4096");
  }
  return parse_slots(text, context);
}

// One line's host, or nothing for a blank or comment line.
std::optional<HostSlots> parse_line(std::string_view line, int number, int default_slots) {
  std::string_view content = trim(line.substr(0, line.find('#')));
  if (content.empty()) return std::nullopt;
  std::string context = "line " + std::to_string(number);
  if (content.front() == '[') {
    throw InvalidArgument(context + ": " + quoted_text(content) +
                          ": IPv6 address literals are not supported; use a host name");
  }
  // "host", "host:slots", "host:drain" or "host:slots:drain".
  bool drain = false;
  if (size_t last = content.rfind(':');
      last != std::string_view::npos && trim(content.substr(last + 1)) == "drain") {
    drain = true;
    content = trim(content.substr(0, last));
  }
  size_t colon = content.find(':');
  std::string_view host = trim(content.substr(0, colon));
  if (!net::valid_host_name(host)) {
    throw InvalidArgument(context + ": " + quoted_text(host) +
                          " is not a valid host name (letters, digits, '.', '-' and '_', "
                          "starting with a letter or digit)");
  }
  int slots = colon == std::string_view::npos
                  ? default_slots
                  : line_slots(trim(content.substr(colon + 1)), context);
  return HostSlots{std::string(host), slots, drain};
}

std::vector<HostSlots> sorted(std::vector<HostSlots> hosts) {
  std::sort(hosts.begin(), hosts.end(),
            [](const HostSlots& a, const HostSlots& b) { return a.host < b.host; });
  return hosts;
}

}  // namespace

std::vector<HostSlots> parse_discovered_hosts(std::string_view text, int default_slots) {
  std::vector<HostSlots> hosts;
  std::map<std::string, int, std::less<>> line_of;
  int number = 0;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    auto host = parse_line(line, ++number, default_slots);
    if (!host) continue;
    // Two entries for one host are a script bug; summing or picking one would hide it.
    auto [it, fresh] = line_of.emplace(host->host, number);
    if (!fresh) {
      throw InvalidArgument("line " + std::to_string(number) + ": host '" + host->host +
                            "' is listed twice (first on line " + std::to_string(it->second) + ")");
    }
    hosts.push_back(std::move(*host));
  }
  return hosts;
}

HostDiscovery::HostDiscovery(HostDiscoveryOptions options, NowFn now)
    : options_(std::move(options)), now_(std::move(now)), next_due_(now_()) {
  if (options_.command.empty() || options_.command[0].empty()) {
    throw InvalidArgument("no host discovery script given");
  }
  const std::string& path = options_.command[0];
  struct stat info {};
  std::string why;
  if (::stat(path.c_str(), &info) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    why = "not a regular file";
  } else if (::access(path.c_str(), X_OK) != 0) {
    why = std::strerror(errno);
  }
  if (!why.empty()) {
    throw InvalidArgument("host discovery script '" + path + "' cannot be run: " + why);
  }
  if (options_.interval.count() < 1) throw InvalidArgument("the discovery interval must be > 0");
  if (options_.limits.timeout.count() < 1) {
    throw InvalidArgument("the discovery script timeout must be > 0");
  }
  if (options_.default_slots < 1 || options_.default_slots > 4096) {
    throw InvalidArgument("--slots-per-host must be between 1 and 4096, got " +
                          std::to_string(options_.default_slots));
  }
}

std::chrono::milliseconds HostDiscovery::time_until_due() const {
  if (run_) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(poll_millis(now_(), next_due_));
}

int HostDiscovery::poll_timeout() const {
  if (run_) return poll_millis(SteadyClock::now(), run_->deadline());
  return poll_millis(now_(), next_due_);
}

std::vector<pollfd> HostDiscovery::poll_fds() const {
  return run_ ? run_->poll_fds() : std::vector<pollfd>{};
}

std::optional<DiscoveryResult> HostDiscovery::advance() {
  if (!run_) {
    if (now_() < next_due_) return std::nullopt;
    if (auto failed = start()) return failed;
  }
  run_->advance();
  if (!run_->done()) return std::nullopt;
  ScriptResult result = run_->result();
  run_.reset();
  return finish(result);
}

DiscoveryResult HostDiscovery::run_now() {
  if (!run_) {
    if (auto failed = start()) return *failed;
  }
  while (true) {
    run_->advance();
    if (run_->done()) break;
    auto fds = run_->poll_fds();
    // Errors (EINTR) just lead to another advance(), which enforces the deadline.
    ::poll(fds.data(), fds.size(), poll_millis(SteadyClock::now(), run_->deadline()));
  }
  ScriptResult result = run_->result();
  run_.reset();
  return finish(result);
}

std::optional<DiscoveryResult> HostDiscovery::start() {
  try {
    run_ = std::make_unique<ScriptRun>(options_.command, options_.limits);
    return std::nullopt;
  } catch (const Error& e) {
    ScriptResult result;
    result.start_error = e.what();
    return finish(result);
  }
}

DiscoveryResult HostDiscovery::finish(const ScriptResult& result) {
  next_due_ = now_() + options_.interval;
  if (!result.ok()) return fail(result, result.problem());
  std::vector<HostSlots> found;
  try {
    found = parse_discovered_hosts(result.out, options_.default_slots);
  } catch (const InvalidArgument& e) {
    return fail(result, std::string("printed an unusable host list: ") + e.what());
  }
  bool changed = !succeeded_ || sorted(found) != sorted(hosts_);
  hosts_ = std::move(found);
  succeeded_ = true;
  consecutive_failures_ = 0;
  return {changed ? DiscoveryStatus::kChanged : DiscoveryStatus::kUnchanged, {}};
}

DiscoveryResult HostDiscovery::fail(const ScriptResult& result, const std::string& problem) {
  ++consecutive_failures_;
  std::string kept =
      succeeded_ ? "keeping the last good set of " + std::to_string(hosts_.size()) + " host(s)"
                 : "no host set known yet";
  return {DiscoveryStatus::kFailed, result.report("host discovery script '" + options_.command[0] +
                                                  "' " + problem + "; " + kept)};
}

}  // namespace cohort::discovery
