// How many shared-memory segments this process maps (the lines of /proc/self/maps that are one),
// for the tests that check none is left behind.
#pragma once

#include <fstream>
#include <string>

namespace cohort::ops::testing {

// `label`: "cohort-shm" for the data plane's segment, "cohort-control" for the control plane's.
inline int mapped_segments(const std::string& label = "cohort-shm") {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:" + label + " ") != std::string::npos) ++count;
  }
  return count;
}

}  // namespace cohort::ops::testing
