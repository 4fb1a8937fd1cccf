// Writes checkpoints for the crash test: `checkpoint_crash_writer DIR GENERATION [KILL_AT]`
// commits generation GENERATION of test::Values (about 6 MiB) and saves it into DIR, printing
// each save step as "step <n> <stage> <bytes>". With KILL_AT = n it SIGKILLs itself right after
// step n, which is exactly where a crash at that moment would leave the directory.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint_values.h"
#include "cohort/cohort.h"
#include "cohort/elastic/checkpoint.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR GENERATION [KILL_AT]\n", argv[0]);
    return 2;
  }
  int generation = std::atoi(argv[2]);
  int kill_at = argc > 3 ? std::atoi(argv[3]) : 0;
  cohort::init();
  {
    test::Values values(generation, (6 << 20) / sizeof(float) + 12345);
    values.commit_generation(generation);
    int step = 0;
    cohort::elastic::CheckpointOptions options;
    options.on_progress = [&](cohort::elastic::SaveStage stage, uint64_t bytes) {
      std::printf("step %d %d %llu\n", ++step, static_cast<int>(stage),
                  static_cast<unsigned long long>(bytes));
      std::fflush(stdout);
      if (step == kill_at) std::raise(SIGKILL);
    };
    cohort::elastic::save(values.state, argv[1], options);
  }
  cohort::shutdown();
  return 0;
}
