// A stand-in worker for the cohortrun tests. Modes:
//   env             print COHORT_* placement and whether the secret leaked into the command line
//   rendezvous      meet every other rank through cohortrun's rendezvous server
//   exit CODE R     rank R prints a line and exits with CODE; the others wait
//   signal SIG R    rank R kills itself with signal SIG; the others wait
//   wait            print "waiting pid=N" and block until a signal ends it
//   stubborn        like wait, but ignores SIGTERM
//   streams         a line on stdout, a line on stderr, then a last line without a newline
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "rendezvous/client.h"
#include "rendezvous/hmac.h"

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
  int port = std::atoi(env_or("COHORT_RENDEZVOUS_PORT", "0"));
  std::printf(
      "rank=%s size=%s local=%s/%s cross=%s/%s host=%s rdv=%s:%s secret_len=%zu "
      "secret_in_argv=%d\n",
      env_or("COHORT_RANK", "?"), env_or("COHORT_SIZE", "?"), env_or("COHORT_LOCAL_RANK", "?"),
      env_or("COHORT_LOCAL_SIZE", "?"), env_or("COHORT_CROSS_RANK", "?"),
      env_or("COHORT_CROSS_SIZE", "?"), env_or("COHORT_HOSTNAME", "?"),
      env_or("COHORT_RENDEZVOUS_ADDR", "?"), port > 0 && port < 65536 ? "port" : "?",
      std::strlen(secret), leaked ? 1 : 0);
  return 0;
}

int meet_everyone() {
  using namespace cohort::rendezvous;
  int rank = std::atoi(env_or("COHORT_RANK", "0"));
  int size = std::atoi(env_or("COHORT_SIZE", "1"));
  RendezvousClient client(env_or("COHORT_RENDEZVOUS_ADDR", ""),
                          std::atoi(env_or("COHORT_RENDEZVOUS_PORT", "0")),
                          from_hex(env_or("COHORT_SECRET", "")), std::chrono::seconds(10));
  client.set("rank" + std::to_string(rank), "hello from " + std::to_string(rank));
  int met = 0;
  for (int peer = 0; peer < size; ++peer) {
    met += client.get("rank" + std::to_string(peer), std::chrono::seconds(10)) ==
           "hello from " + std::to_string(peer);
  }
  std::printf("met %d of %d\n", met, size);
  return met == size ? 0 : 1;
}

int wait_for_signal(bool ignore_term) {
  if (ignore_term) signal(SIGTERM, SIG_IGN);
  std::printf("waiting pid=%d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "env";
  int rank = std::atoi(env_or("COHORT_RANK", "0"));
  // Only the rank named by the third argument misbehaves; the others wait to be stopped.
  int target = argc > 3 ? std::atoi(argv[3]) : rank;
  if (mode == "env") return print_env();
  if (mode == "rendezvous") return meet_everyone();
  if (mode == "streams") {
    std::printf("to stdout\n");
    std::fprintf(stderr, "to stderr\n");
    std::printf("no newline at the end");
    return 0;
  }
  if (mode == "stubborn") return wait_for_signal(true);
  if (rank != target || mode == "wait") return wait_for_signal(false);
  if (mode == "exit") {
    std::printf("exiting with %s\n", argv[2]);
    return std::atoi(argv[2]);
  }
  if (mode == "signal") {
    std::fflush(stdout);
    raise(std::atoi(argv[2]));
  }
  return 0;
}
