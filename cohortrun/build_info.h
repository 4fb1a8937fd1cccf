// What this build of Cohort has: `cohortrun --version` and `cohortrun --check-build`. The facts
// are fixed when cohortrun is compiled (cohortrun/CMakeLists.txt).
#pragma once

#include <string>

namespace cohort::discovery {

// "cohortrun (Cohort) 0.1.0".
std::string version_text();

// The backends, launchers and framework bindings built in, one "[X] name" or "[ ] name" line
// each, under headings, as horovodrun --check-build prints them.
std::string build_report();

}  // namespace cohort::discovery
