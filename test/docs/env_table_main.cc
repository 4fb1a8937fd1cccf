// cohort_env_table: prints the table of Config's settings (core/config_table.h), one row a line:
// NAME<TAB>DEFAULT<TAB>DOC. check_environment_doc.py checks docs/environment.md against it.
#include <cstdio>

#include "core/config.h"
#include "core/config_table.h"

int main() {
  const cohort::Config defaults;
  for (const auto& setting : cohort::config_table::settings()) {
    std::printf("%s\t%s\t%s\n", setting.name, cohort::config_table::show(setting, defaults).c_str(),
                setting.doc);
  }
  return 0;
}
