#include "launcher/worker_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/decimal.h"
#include "base/safe_write.h"
#include "cohort/errors.h"
#include "launcher/job_report.h"
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
  try {
    directory_.emplace(files::Directory::open(options_.directory, files::Directory::Create::kYes));
  } catch (const Error& e) {
    throw InvalidArgument(std::string("--output-filename: ") + e.what());
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

std::vector<std::string> WorkerOutput::subdirectories(const OutputSource& from) const {
  if (!from.rank) return {"worker." + from.label};
  if (from.round)
    return {"round." + std::to_string(*from.round), "rank." + std::to_string(*from.rank)};
  return {"rank." + padded(*from.rank, options_.rank_digits)};
}

Fd WorkerOutput::open_file(const std::vector<std::string>& below, const std::string& name) const {
  std::optional<files::Directory> dir;
  for (const auto& sub : below) {
    files::Directory next = (dir ? *dir : *directory_).child(sub, files::Directory::Create::kYes);
    dir = std::move(next);
  }
  return files::open_append(dir ? *dir : *directory_, name);
}

void WorkerOutput::write_file(const OutputSource& from, bool is_stderr, const std::string& text) {
  std::vector<std::string> below = subdirectories(from);
  std::string name = is_stderr ? "stderr" : "stdout";
  std::string relative;
  for (const auto& sub : below) relative += sub + "/";
  std::string path = directory_->path_of(relative + name);
  auto it = files_.find(path);
  if (it == files_.end()) {
    Fd fd;
    try {
      fd = open_file(below, name);
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
