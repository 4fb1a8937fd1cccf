// A stand-in worker for the cohortrun tests. Modes:
//   env             print COHORT_* placement and whether the secret leaked into the command line
//   exit CODE       print a line, then exit with CODE
//   signal SIG      kill itself with signal SIG
//   wait            print "waiting" and block until a signal ends it
//   partial         write a last line without a newline
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

int print_env() {
  std::ifstream cmdline("/proc/self/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), {});
  const char* secret = env_or("COHORT_SECRET", "");
  bool leaked = std::strlen(secret) > 0 && args.find(secret) != std::string::npos;
  std::printf("rank=%s size=%s local=%s/%s cross=%s/%s host=%s secret_len=%zu secret_in_argv=%d\n",
              env_or("COHORT_RANK", "?"), env_or("COHORT_SIZE", "?"),
              env_or("COHORT_LOCAL_RANK", "?"), env_or("COHORT_LOCAL_SIZE", "?"),
              env_or("COHORT_CROSS_RANK", "?"), env_or("COHORT_CROSS_SIZE", "?"),
              env_or("COHORT_HOSTNAME", "?"), std::strlen(secret), leaked ? 1 : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "env";
  int rank = std::atoi(env_or("COHORT_RANK", "0"));
  // Only the rank named by the third argument misbehaves; the others wait to be stopped.
  int target = argc > 3 ? std::atoi(argv[3]) : rank;
  if (mode == "env") return print_env();
  if (rank != target) mode = "wait";
  if (mode == "exit") {
    std::printf("exiting with %s\n", argv[2]);
    return std::atoi(argv[2]);
  }
  if (mode == "signal") {
    std::fflush(stdout);
    raise(std::atoi(argv[2]));
    return 0;
  }
  if (mode == "partial") {
    std::printf("no newline at the end");
    return 0;
  }
  std::printf("waiting\n");
  std::fflush(stdout);
  pause();
  return 0;
}
