// Round formation on the built-in rendezvous server at N simulated elastic workers: the real
// server as cohortrun's elastic mode starts it (elastic_job/round_board.h: start_elastic_server)
// and the launcher's real side of the protocol (elastic_job/elastic_inbox.h, ElasticInbox, and
// launcher/round_board.h, RoundBoard: on every wake-up it reads the check-ins that arrived, as
// ElasticJob::collect_checkins does, and then it writes the assignments), with N workers in a few
// forked processes, one thread and one real RendezvousClient (one connection) each, speaking
// rendezvous/elastic_protocol.h: SET their check-in, GET their assignment. Measured: the time
// from "go" until every worker holds its assignment, for a first round (connections opened on the
// way) and for the next round after one worker died, and the launcher process's CPU over it
// (server threads and launcher). Run by bench/scale/run.sh; see docs/scaling.md.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "elastic_job/round_board.h"
#include "rendezvous/client.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/server.h"
#include "scale_util.h"

namespace cohort::bench::scale {
namespace {

using std::chrono::milliseconds;
namespace rdv = rendezvous;

struct Options {
  std::vector<int> workers{64, 128, 256, 512, 1024};
  int procs = 4;
  int timeout_s = 30;  // a round that takes longer is reported as failed
};

// A child's side: its workers' clients, and the rounds the parent starts through `commands`.
// Answers "ok" or "failed" on `answers` after each round.
[[noreturn]] void serve(const std::vector<int>& ids, int port, const std::string& secret,
                        milliseconds timeout, int commands, int answers) {
  std::vector<std::unique_ptr<rdv::RendezvousClient>> clients;
  for (size_t i = 0; i < ids.size(); ++i) {
    clients.push_back(std::make_unique<rdv::RendezvousClient>("127.0.0.1", port, secret, timeout,
                                                              rdv::kElasticScope));
  }
  char command[64];
  for (int entry = 0;; ++entry) {
    ssize_t n = ::read(commands, command, sizeof command - 1);
    if (n <= 0 || command[0] == 'q') std::_Exit(0);
    command[n] = 0;
    int dead = std::atoi(command + 1);  // the worker that died before this round (-1: none)
    std::atomic<bool> failed{false};
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == dead) clients[i].reset();  // its connection closes
      if (!clients[i]) continue;
      threads.emplace_back([&, i] {
        try {
          auto id = std::to_string(ids[i]);
          auto kind = entry == 0 ? rdv::CheckIn::Kind::kStart : rdv::CheckIn::Kind::kFailed;
          clients[i]->set(rdv::checkin_key(id, entry), rdv::format_checkin({kind, ""}));
          rdv::parse_assignment(clients[i]->get(rdv::assign_key(id, entry), timeout));
        } catch (const std::exception& e) {
          failed = true;
        }
      });
    }
    for (auto& t : threads) t.join();
    const char* answer = failed ? "failed\n" : "ok\n";
    [[maybe_unused]] ssize_t w = ::write(answers, answer, std::strlen(answer));
  }
}

struct Child {
  pid_t pid;
  int commands, answers;
};

struct Round {
  double seconds = 0, cpu = 0;
  bool ok = true;
};

// The launcher's loop for one round: reads the check-ins that arrived on every wake-up, assigns
// once all `expected` workers have checked in for `entry`, then waits for every child's answer.
Round form(const Options& o, std::vector<Child>& children, discovery::RoundBoard& board,
           discovery::ElasticInbox& inbox, const std::vector<int>& expected, int entry, int dead) {
  Round r;
  double start = wall_seconds(), cpu = cpu_seconds(true);
  double deadline = start + o.timeout_s + 5;
  std::string command = "g" + std::to_string(dead) + "\n";
  for (auto& c : children) {
    [[maybe_unused]] ssize_t w = ::write(c.commands, command.data(), command.size());
  }
  std::vector<bool> wanted(static_cast<size_t>(expected.back() + 1), false),
      seen(wanted.size(), false);
  for (int id : expected) wanted[id] = true;
  size_t count = 0;
  while (count < expected.size() && wall_seconds() < deadline) {
    pollfd p{.fd = inbox.fd(), .events = POLLIN};
    ::poll(&p, 1, 100);
    for (const auto& a : inbox.take().checkins) {
      if (a.entry != entry || a.id < 0 || a.id >= static_cast<int>(wanted.size())) continue;
      if (!wanted[a.id] || seen[a.id] || !board.checkin(a.id, entry, "worker")) continue;
      seen[a.id] = true, ++count;
    }
  }
  int size = static_cast<int>(expected.size());
  for (int rank = 0; rank < size && count == expected.size(); ++rank) {
    board.assign(
        expected[rank], entry,
        {.round = entry + 1, .placement = {.rank = rank, .size = size, .local_size = size}});
  }
  for (auto& c : children) {
    char answer[16] = {};
    pollfd p{.fd = c.answers, .events = POLLIN};
    int left = static_cast<int>((deadline - wall_seconds()) * 1000);
    if (left <= 0 || ::poll(&p, 1, left) <= 0 || ::read(c.answers, answer, sizeof answer) <= 0 ||
        answer[0] != 'o') {
      r.ok = false;
    }
  }
  r.seconds = wall_seconds() - start;
  r.cpu = cpu_seconds(true) - cpu;
  r.ok = r.ok && count == expected.size();
  return r;
}

std::pair<Round, Round> run(const Options& o, int n) {
  discovery::ElasticInbox inbox;
  discovery::RendezvousEndpoint endpoint{"127.0.0.1", 0, std::string(32, 'k')};
  auto server = discovery::start_elastic_server(endpoint, milliseconds(o.timeout_s * 1000), inbox);
  auto store = server->store(rdv::kElasticScope);
  discovery::RoundBoard board(*store);
  std::vector<Child> children;
  int procs = std::min(o.procs, n);
  for (int c = 0; c < procs; ++c) {
    std::vector<int> ids;
    for (int id = c; id < n; id += procs) ids.push_back(id);
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) throw Error("rendezvous_bench: pipe failed");
    pid_t pid = ::fork();
    if (pid == 0) {
      serve(ids, endpoint.port, endpoint.secret, milliseconds(o.timeout_s * 1000), down[0], up[1]);
    }
    ::close(down[0]), ::close(up[1]);
    children.push_back({pid, down[1], up[0]});
  }
  std::vector<int> everyone;
  for (int id = 0; id < n; ++id) everyone.push_back(id);
  Round first = form(o, children, board, inbox, everyone, 0, -1);
  Round after;
  if (first.ok) {
    std::vector<int> survivors(everyone.begin() + 1, everyone.end());  // worker 0 died
    after = form(o, children, board, inbox, survivors, 1, 0);
  }
  for (auto& c : children) {
    [[maybe_unused]] ssize_t w = ::write(c.commands, "q\n", 2);
    ::close(c.commands), ::close(c.answers);
  }
  for (auto& c : children) ::waitpid(c.pid, nullptr, 0);
  server->stop();
  return {first, after};
}

void report(const Options& o) {
  std::printf("# rendezvous: elastic round formation on the built-in server, %d worker processes\n",
              o.procs);
  std::printf("%7s %6s %12s %12s %13s %13s\n", "workers", "procs", "first_ms", "first_cpu_ms",
              "after_death_ms", "after_cpu_ms");
  std::vector<double> x, first_ms;
  for (int n : o.workers) {
    auto [first, after] = run(o, n);
    auto ms = [](const Round& r) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f", r.seconds * 1e3);
      return r.ok ? std::string(text) : std::string("failed");
    };
    std::printf("%7d %6d %12s %12.1f %13s %13.1f\n", n, std::min(o.procs, n), ms(first).c_str(),
                first.cpu * 1e3, first.ok ? ms(after).c_str() : "-", after.cpu * 1e3);
    std::fflush(stdout);
    if (first.ok) x.push_back(n), first_ms.push_back(first.seconds);
  }
  std::printf("# fit rendezvous: first round ~ N^%.2f\n", loglog_slope(x, first_ms));
}

}  // namespace
}  // namespace cohort::bench::scale

int main(int argc, char** argv) {
  cohort::bench::scale::Options o;
  CLI::App app("Elastic round formation on the built-in rendezvous server with N workers");
  app.add_option("--workers", o.workers)->capture_default_str();
  app.add_option("--procs", o.procs, "processes running the workers")->capture_default_str();
  app.add_option("--timeout-s", o.timeout_s, "a round's limit")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  cohort::log::set_level(cohort::log::Level::kError);
  cohort::bench::scale::report(o);
  return 0;
}
