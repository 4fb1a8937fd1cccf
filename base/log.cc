#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>

#include "base/mutex.h"
#include "cohort/errors.h"

namespace cohort::log {
namespace {

// Logging configuration is process-wide by nature (stderr is); it holds no runtime state.
std::atomic<Level> g_level{Level::kWarning};

struct Prefix {
  Mutex mutex;
  std::string text GUARDED_BY(mutex);
};

// Never destroyed: a program that returns from main() without cohort::shutdown() leaves the
// Runtime to the exit handlers, and its threads may still log after other statics are gone.
Prefix& prefix() {
  static Prefix* p = new Prefix;
  return *p;
}

// Per key: when its current window opened, how many of its lines that window wrote, and how many
// were held back since the last one written.
struct Repeats {
  struct Window {
    std::chrono::steady_clock::time_point opened;
    int written = 0;
    uint64_t held = 0;
  };
  Mutex mutex;
  std::chrono::milliseconds window GUARDED_BY(mutex){std::chrono::seconds(10)};
  std::map<std::string, Window, std::less<>> keys GUARDED_BY(mutex);
};

Repeats& repeats() {
  static Repeats* r = new Repeats;  // never destroyed, like the prefix
  return *r;
}

const char* level_name(Level lvl) {
  switch (lvl) {
    case Level::kTrace:
      return "TRACE";
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

Level parse_level(std::string_view text) {
  if (text == "trace") return Level::kTrace;
  if (text == "debug") return Level::kDebug;
  if (text == "info") return Level::kInfo;
  if (text == "warning") return Level::kWarning;
  if (text == "error") return Level::kError;
  throw InvalidArgument("log level '" + std::string(text) +
                        "' is not one of trace, debug, info, warning, error");
}

void set_level(Level lvl) {
  g_level = lvl;
}
Level level() {
  return g_level;
}

void set_prefix(std::string text) {
  Prefix& p = prefix();
  MutexLock lock(p.mutex);
  p.text = std::move(text);
}

void set_repeat_window(std::chrono::milliseconds window) {
  Repeats& r = repeats();
  MutexLock lock(r.mutex);
  r.window = window;
  r.keys.clear();
}

bool admit(std::string_view key, std::string& note, int burst) {
  Repeats& r = repeats();
  auto now = std::chrono::steady_clock::now();
  MutexLock lock(r.mutex);
  note.clear();
  auto [it, first] = r.keys.try_emplace(std::string(key), Repeats::Window{.opened = now});
  Repeats::Window& w = it->second;
  auto opened = w.opened;  // the window whose held-back lines the note counts
  if (!first && now - w.opened >= r.window) {
    w.opened = now;
    w.written = 0;
  }
  if (w.written >= burst) {
    ++w.held;
    return false;
  }
  ++w.written;
  if (w.held > 0) {
    std::chrono::duration<double> since = now - opened;
    char text[96];
    std::snprintf(text, sizeof text, " (repeated %llu more times in the last %.1f s)",
                  static_cast<unsigned long long>(w.held), since.count());
    note = text;
    w.held = 0;
  }
  return true;
}

void write(Level lvl, std::string_view message) {
  std::string line;
  {
    Prefix& p = prefix();
    MutexLock lock(p.mutex);
    line = p.text.empty() ? "" : p.text + " ";
  }
  line += "cohort ";
  line += level_name(lvl);
  line += ": ";
  line += message;
  line += '\n';
  // One write(2) per line: atomic with respect to other writers of the same pipe.
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace cohort::log
