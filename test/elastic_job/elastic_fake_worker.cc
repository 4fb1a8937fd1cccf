// A stand-in elastic worker for the cohortrun elastic tests: it speaks the launcher side of
// rendezvous/elastic_protocol.h and nothing else (no Gloo, no training). Each round it prints
//   worker <id> round <r> rank <k> size <s>
// (after "worker <id> listens on <COHORT_HOSTNAME>" once at the start), and then waits for the
// next host notice, as a real worker would learn of one at a commit.
// What it does instead is chosen per (round, rank) on its command line:
//   --at ROUND:RANK ACTION   ROUND or RANK may be '*'; the first match wins
// with ACTION one of
//   finish     print "worker <id> finished" and exit 0
//   exit=CODE  exit with CODE
//   die        raise(SIGKILL)
//   fail       check in again at once as after a failed collective
//   hang       stop answering (sleep until killed)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rendezvous/client.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/hmac.h"

namespace {

using namespace cohort::rendezvous;
using namespace std::chrono_literals;

struct Rule {
  std::string round, rank, action;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    std::fprintf(stderr, "fake worker: %s is not set\n", name);
    std::exit(2);
  }
  return v;
}

std::vector<Rule> parse_rules(int argc, char** argv) {
  std::vector<Rule> rules;
  for (int i = 1; i < argc; i += 3) {
    std::string at = argv[i];
    if (at != "--at" || i + 2 >= argc) {
      std::fprintf(stderr, "usage: elastic_fake_worker [--at ROUND:RANK ACTION]...\n");
      std::exit(2);
    }
    std::string where = argv[i + 1];
    auto colon = where.find(':');
    rules.push_back({where.substr(0, colon), where.substr(colon + 1), argv[i + 2]});
  }
  return rules;
}

std::string action_for(const std::vector<Rule>& rules, const Assignment& a) {
  auto matches = [](const std::string& pattern, int value) {
    return pattern == "*" || pattern == std::to_string(value);
  };
  for (const auto& r : rules) {
    if (matches(r.round, a.round) && matches(r.rank, a.placement.rank)) return r.action;
  }
  return "";
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Waits for notice `generation`, as a worker between commits would (bounded: 5 minutes).
void await_notice(RendezvousClient& client, int generation) {
  for (int tries = 0; tries < 30; ++tries) {
    try {
      client.get(notice_key(generation), 10s);
      return;
    } catch (const RendezvousTimeout&) {
    }
  }
  say("no host notice within 5 minutes");
  std::exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Rule> rules = parse_rules(argc, argv);
  std::string id = env("COHORT_WORKER_ID");
  RendezvousClient client(env("COHORT_RENDEZVOUS_ADDR"), std::stoi(env("COHORT_RENDEZVOUS_PORT")),
                          from_hex(env("COHORT_SECRET")), 10s, kElasticScope);
  say("worker " + id + " listens on " + env("COHORT_HOSTNAME"));
  CheckIn checkin{CheckIn::Kind::kStart, ""};
  for (int entry = 0;; ++entry) {
    client.set(checkin_key(id, entry), format_checkin(checkin));
    Assignment a = parse_assignment(client.get(assign_key(id, entry), 60s));
    if (a.exit) {
      say("worker " + id + " told to exit");
      return 0;
    }
    say("worker " + id + " round " + std::to_string(a.round) + " rank " +
        std::to_string(a.placement.rank) + " size " + std::to_string(a.placement.size));
    std::string action = action_for(rules, a);
    if (action == "finish") {
      say("worker " + id + " finished");
      return 0;
    }
    if (action.rfind("exit=", 0) == 0) return std::atoi(action.c_str() + 5);
    if (action == "die") raise(SIGKILL);
    if (action == "hang") {
      for (;;) pause();
    }
    if (action == "fail") {
      checkin = {CheckIn::Kind::kFailed, "fake collective failure"};
      continue;
    }
    await_notice(client, a.generation + 1);
    checkin = {CheckIn::Kind::kInterrupted, "hosts updated"};
  }
}
