#include "launcher/worker_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/decimal.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"
#include "launcher/output_file.h"
#include "launcher/utc_time.h"

namespace cohort::discovery {
namespace {

// `lines` with `prefix` before each line.
std::string prefixed(std::string_view lines, const std::string& prefix) {
  std::string out;
  size_t start = 0;
  while (start < lines.size()) {
    size_t nl = lines.find('\n', start);
    size_t end = nl == std::string_view::npos ? lines.size() : nl + 1;
    out += prefix;
    out.append(lines.substr(start, end - start));
    start = end;
  }
  return out;
}

std::string padded(int rank, int digits) {
  std::string text = std::to_string(rank);
  return std::string(text.size() < static_cast<size_t>(digits) ? digits - text.size() : 0, '0') +
         text;
}

}  // namespace

std::set<int> parse_rank_list(const std::string& text) {
  auto bad = [&] {
    return InvalidArgument("--console-ranks: '" + text +
                           "' is not a list of ranks such as 0 or 0,2-3");
  };
  std::set<int> ranks;
  std::string_view rest = text;
  while (true) {
    std::string_view part = rest.substr(0, rest.find(','));
    size_t dash = part.find('-');
    auto lo = whole_number(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : whole_number(part.substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi - *lo > (1 << 20)) throw bad();
    for (int r = *lo; r <= *hi; ++r) ranks.insert(r);
    if (part.size() == rest.size()) return ranks;
    rest.remove_prefix(part.size() + 1);
  }
}

WorkerOutput::WorkerOutput(OutputOptions options) : options_(std::move(options)) {
  if (options_.directory.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(options_.directory, error);
  if (error || !std::filesystem::is_directory(options_.directory)) {
    throw InvalidArgument("--output-filename: cannot create directory '" + options_.directory +
                          "'" + (error ? ": " + error.message() : ""));
  }
}

void WorkerOutput::write(const OutputSource& from, bool is_stderr, std::string_view lines) {
  std::string stamp = options_.timestamps ? utc_timestamp() + " " : "";
  if (!options_.directory.empty()) write_file(from, is_stderr, prefixed(lines, stamp));
  bool shown = !options_.console || (from.rank && options_.console->contains(*from.rank));
  if (shown) {
    write_all(is_stderr ? STDERR_FILENO : STDOUT_FILENO,
              prefixed(lines, stamp + "[" + from.label + "] "));
  }
}

std::string WorkerOutput::file_path(const OutputSource& from, bool is_stderr) const {
  std::string dir = options_.directory + "/";
  if (!from.rank) {
    dir += "worker." + from.label;
  } else if (from.round) {
    dir += "round." + std::to_string(*from.round) + "/rank." + std::to_string(*from.rank);
  } else {
    dir += "rank." + padded(*from.rank, options_.rank_digits);
  }
  return dir + (is_stderr ? "/stderr" : "/stdout");
}

void WorkerOutput::write_file(const OutputSource& from, bool is_stderr, const std::string& text) {
  std::string path = file_path(from, is_stderr);
  auto it = files_.find(path);
  if (it == files_.end()) {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
    Fd fd;
    try {
      fd = open_append_file(path);
    } catch (const Error& e) {
      if (!file_error_reported_) {
        report(std::string("--output-filename: ") + e.what() +
               "; the console still has the output");
      }
      file_error_reported_ = true;
    }
    it = files_.emplace(path, std::move(fd)).first;
  }
  if (it->second.valid()) write_all(it->second.get(), text);
}

}  // namespace cohort::discovery
