#include "launcher/job_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/net.h"
#include "base/safe_write.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"
#include "launcher/utc_time.h"

namespace cohort::discovery {

JobEvents::JobEvents(JobEventsOptions options) : options_(std::move(options)) {
  if (!options_.metrics_file.empty()) {
    metrics_.emplace(options_.job_id, options_.node);
    try {
      write_metrics_file();
    } catch (const Error& e) {
      throw InvalidArgument(std::string("--metrics-file: ") + e.what());
    }
  }
  if (options_.event_log.empty()) return;
  try {
    log_ = files::open_append(options_.event_log);
  } catch (const Error& e) {
    throw InvalidArgument(std::string("--event-log: ") + e.what());
  }
}

void JobEvents::emit(const std::string& event, nlohmann::json fields) {
  if (metrics_) {
    metrics_->observe(event, fields);
    write_metrics();
  }
  if (!log_.valid()) return;
  // Ordered: the time, the job and the event first on every line, for people reading it too.
  nlohmann::ordered_json line = {
      {"time", utc_timestamp()}, {"job", options_.job_id}, {"event", event}};
  if (!options_.node.empty()) line["node"] = options_.node;
  for (const auto& [key, value] : fields.items()) line[key] = value;
  // One write(2) per line, appended: lines of agents sharing the file never interleave.
  std::string text =
      line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (::write(log_.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) &&
      !write_error_reported_) {
    write_error_reported_ = true;
    report("--event-log: cannot write to '" + options_.event_log + "': " + std::strerror(errno));
  }
}

void JobEvents::progress(uint64_t commits, uint64_t samples) {
  if (!metrics_) return;
  metrics_->progress(commits, samples);
  write_metrics();
}

void JobEvents::write_metrics_file() const {
  // 0644 whatever the umask: node_exporter's textfile collector reads it as another user.
  files::write_file_atomically(options_.metrics_file, metrics_->text(),
                               {.mode = 0644, .exact_mode = true});
}

void JobEvents::write_metrics() {
  try {
    write_metrics_file();
  } catch (const Error& e) {
    if (!metrics_error_reported_) report(std::string("--metrics-file: ") + e.what());
    metrics_error_reported_ = true;
  }
}

std::string new_job_id() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &utc);
  return net::local_host_name() + "-" + when + "-" + std::to_string(::getpid());
}

}  // namespace cohort::discovery
