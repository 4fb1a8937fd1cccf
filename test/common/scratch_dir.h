// Tests of files: a fresh directory under the system's temporary directory, removed with all it
// holds when the test ends, and the helpers that put things in it and read them back.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cohort::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& label = "cohort_test") {
    std::string name = (std::filesystem::temp_directory_path() / (label + ".XXXXXX")).string();
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = name;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string operator/(const std::string& name) const { return (path / name).string(); }

  std::filesystem::path path;
};

inline std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

inline size_t entry_count(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                           std::filesystem::directory_iterator()));
}

}  // namespace cohort::testing
