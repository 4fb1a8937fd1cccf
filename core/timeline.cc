#include "core/timeline.h"

#include <unistd.h>

#include "base/safe_write.h"
#include "cohort/errors.h"

namespace cohort {
namespace {

std::string json_quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

Timeline::Timeline(const std::string& path) : start_(std::chrono::steady_clock::now()) {
  try {
    auto [dir, name] = files::Directory::of_file(path);
    files::ReplacingFile file(dir, name);
    file.write("[");
    // Published at once, not at the end: a rank 0 killed at any moment leaves its whole events
    // under the timeline's name.
    file.publish();
    fd_ = file.release();
  } catch (const Error& e) {
    throw InvalidArgument(std::string("COHORT_TIMELINE: ") + e.what());
  }
}

Timeline::~Timeline() {
  // A last, ignorable metadata event closes the array after the previous ",\n".
  if (enabled())
    emit(R"({"name":"trace_end","ph":"M","pid":0,"args":{}}])"
         "\n");
}

int64_t Timeline::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start_)
      .count();
}

void Timeline::emit(const std::string& json) {
  // One write per event: whole events only, whatever happens to the process afterwards.
  [[maybe_unused]] ssize_t n = ::write(fd_.get(), json.data(), json.size());
}

int Timeline::row(const std::string& tensor) {
  auto [it, added] = rows_.emplace(tensor, static_cast<int>(rows_.size()) + 1);
  if (added) {
    emit(R"({"name":"thread_name","ph":"M","pid":0,"tid":)" + std::to_string(it->second) +
         R"(,"args":{"name":)" + json_quoted(tensor) + "}},\n");
  }
  return it->second;
}

void Timeline::negotiation_started(const std::string& tensor, std::string_view op) {
  if (!enabled()) return;
  int tid = row(tensor);
  emit(R"({"name":)" + json_quoted("NEGOTIATE_" + std::string(op)) + R"(,"ph":"B","pid":0,"tid":)" +
       std::to_string(tid) + R"(,"ts":)" + std::to_string(now_us()) + "},\n");
}

void Timeline::rank_ready(const std::string& tensor, int rank) {
  if (!enabled()) return;
  int tid = row(tensor);
  emit(R"({"name":"rank )" + std::to_string(rank) + R"( ready","ph":"i","s":"t","pid":0,"tid":)" +
       std::to_string(tid) + R"(,"ts":)" + std::to_string(now_us()) + "},\n");
}

void Timeline::negotiation_ended(const std::string& tensor) {
  if (!enabled()) return;
  emit(R"({"ph":"E","pid":0,"tid":)" + std::to_string(row(tensor)) + R"(,"ts":)" +
       std::to_string(now_us()) + "},\n");
}

void Timeline::execution_started(const std::string& tensor, std::string_view op, size_t bytes) {
  if (!enabled()) return;
  emit(R"({"name":)" + json_quoted(op) + R"(,"ph":"B","pid":0,"tid":)" +
       std::to_string(row(tensor)) + R"(,"ts":)" + std::to_string(now_us()) +
       R"(,"args":{"bytes":)" + std::to_string(bytes) + "}},\n");
}

void Timeline::execution_ended(const std::string& tensor, std::string_view outcome) {
  if (!enabled()) return;
  emit(R"({"ph":"E","pid":0,"tid":)" + std::to_string(row(tensor)) + R"(,"ts":)" +
       std::to_string(now_us()) + R"(,"args":{"outcome":)" + json_quoted(outcome) + "}},\n");
}

}  // namespace cohort
