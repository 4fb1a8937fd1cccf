// Tests that check what was logged: this process's stderr goes to a temporary file while a
// CapturedStderr lives, and lines() or text() read back what was written.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace cohort::testing {

class CapturedStderr {
 public:
  CapturedStderr() : file_(std::tmpfile()), saved_(::dup(STDERR_FILENO)) {
    std::fflush(stderr);
    ::dup2(fileno(file_), STDERR_FILENO);
  }
  ~CapturedStderr() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    std::fclose(file_);
  }
  CapturedStderr(const CapturedStderr&) = delete;
  CapturedStderr& operator=(const CapturedStderr&) = delete;

  std::vector<std::string> lines() {
    std::fflush(stderr);
    std::vector<std::string> out;
    std::rewind(file_);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, file_)) out.emplace_back(buf);
    return out;
  }

  std::string text() {
    std::string out;
    for (const auto& line : lines()) out += line;
    return out;
  }

 private:
  FILE* file_;
  int saved_;
};

}  // namespace cohort::testing
