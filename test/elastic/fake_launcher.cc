// A stand-in for cohortrun's elastic mode, to test the worker side of the elastic protocol
// (rendezvous/elastic_protocol.h) on its own: it serves a real RendezvousServer, starts real
// elastic_trainer processes with the elastic environment, waits for their check-ins (server-side
// GETs, no polling), publishes assignments and host notices, and checks what the workers print.
//
//   fake_launcher kill TRAINER DIR    3 workers; w1 SIGKILLs itself at step 10 of round 0; the
//                                     survivors check in "failed" and finish as a world of 2
//   fake_launcher kill-rank0 ...      the same with w0, rank 0: w1 becomes rank 0
//   fake_launcher hosts TRAINER DIR   3 workers; notice 1: they check in "interrupted" at their
//                                     first commit and go on with a new worker w3 (4); notice 2:
//                                     again, and w1 is assigned "exit" (3 go on)
//   fake_launcher timeout TRAINER DIR  1 worker that is never assigned fails after its elastic
//                                     timeout (1 s), naming the key it waited for
//
// With "etcd" before DIR the job's store is a real etcd that the launcher starts
// (test/rendezvous/etcd_server.h) instead of the rendezvous server: the workers then check in,
// wait for assignments, watch their rounds and build their Gloo connections through etcd, as
// they do under cohortrun's agents.
//
// In the first two the finished workers must agree on the model, and the commits rank 0 logged
// must hold every sample of every epoch exactly once. Exits 0 on success, else 1 naming the
// first failure (and printing the workers' output).
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/fd.h"
#include "launcher/job_report.h"
#include "launcher/spawn.h"
#include "rendezvous/client.h"
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/hmac.h"
#include "rendezvous/server.h"
#include "test/elastic/trainer_shape.h"
#include "test/rendezvous/etcd_server.h"

extern char** environ;

namespace {

using namespace cohort;
using namespace cohort::discovery;
using namespace cohort::rendezvous;
using namespace cohort::rendezvous;
using std::chrono::milliseconds;
using Kind = CheckIn::Kind;

// Generous: the machine is small and shared; a passing run takes a few seconds.
constexpr milliseconds kWait{60'000};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Worker {
  pid_t pid = -1;
  Fd pidfd;
  std::optional<int> status;
  int entry = 0;  // the next check-in expected
};

class FakeLauncher {
 public:
  // On `etcd` if given, else on a rendezvous server of its own.
  FakeLauncher(std::string trainer, std::string dir, cohort::testing::EtcdServer* etcd)
      : trainer_(std::move(trainer)),
        dir_(std::move(dir)),
        secret_(random_bytes(kSecretSize)),
        etcd_(etcd),
        store_(open_store()) {}

  ~FakeLauncher() {
    for (auto& [id, w] : workers_) {
      if (!w.status) ::kill(w.pid, SIGKILL);  // only ever our own children, on failure
      if (!w.status) ::waitpid(w.pid, nullptr, 0);
    }
  }

  void spawn(const std::string& id, std::vector<std::string> args = {},
             const std::string& elastic_timeout = "60") {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("COHORT_WORKER_ID=" + id);
    env.push_back("COHORT_HOSTNAME=127.0.0.1");
    if (etcd_) {
      env.push_back("COHORT_ETCD_ENDPOINTS=" + etcd_->endpoint());
      env.push_back("COHORT_ETCD_PREFIX=" + etcd_prefix_);
    } else {
      env.push_back("COHORT_RENDEZVOUS_ADDR=127.0.0.1");
      env.push_back("COHORT_RENDEZVOUS_PORT=" + std::to_string(server_->port()));
    }
    env.push_back("COHORT_SECRET=" + to_hex(secret_));
    env.push_back("COHORT_LOG_LEVEL=info");
    env.push_back("COHORT_ELASTIC_TIMEOUT_SECONDS=" + elastic_timeout);
    args.insert(args.begin(), trainer_);
    Fd out(::open((dir_ + "/" + id + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    Fd err(::open((dir_ + "/" + id + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
    if (!out.valid() || !err.valid()) throw Failure("cannot create output files in " + dir_);
    Spawned s = spawn_in_own_group(args, &env, {out.get(), err.get(), true}, false);
    if (s.error != 0)
      throw Failure("cannot start " + trainer_ + ": error " + std::to_string(s.error));
    Worker& w = workers_[id];
    w.pid = s.pid;
    w.pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, s.pid, 0)));
    if (!w.pidfd.valid()) throw Failure("pidfd_open failed for " + id);
  }

  // Waits for worker `id`'s next check-in and checks its kind.
  void await_checkin(const std::string& id, Kind expected) {
    Worker& w = workers_.at(id);
    std::string key = checkin_key(id, w.entry);
    CheckIn c;
    try {
      c = parse_checkin(store_->get(key, kWait));
    } catch (const cohort::Error& e) {
      throw Failure("no check-in '" + key + "': " + e.what());
    }
    if (c.kind != expected) {
      throw Failure("check-in '" + key + "' is '" + format_checkin(c) + "', expected kind " +
                    std::to_string(static_cast<int>(expected)));
    }
    std::cout << "fake_launcher: " << key << " = " << format_checkin(c).substr(0, 120) << std::endl;
  }

  // Publishes round `round` with `ranks` in rank order (one host), answering each worker's last
  // check-in.
  void assign(int round, int generation, const std::vector<std::string>& ranks) {
    int size = static_cast<int>(ranks.size());
    for (int r = 0; r < size; ++r) {
      Assignment a{.round = round,
                   .placement = {.rank = r,
                                 .size = size,
                                 .local_rank = r,
                                 .local_size = size,
                                 .cross_rank = 0,
                                 .cross_size = 1},
                   .generation = generation};
      publish(ranks[r], format_assignment(a));
    }
  }

  void assign_exit(const std::string& id) { publish(id, format_assignment({.exit = true})); }

  void notice(int generation) { store_->set(notice_key(generation), "hosts changed"); }

  // Waits for worker `id` to exit; returns its waitpid status.
  int await_exit(const std::string& id) {
    Worker& w = workers_.at(id);
    pollfd p{w.pidfd.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kWait.count())) != 1) {
      throw Failure("worker " + id + " did not exit within " + std::to_string(kWait.count()) +
                    " ms");
    }
    int status = 0;
    ::waitpid(w.pid, &status, 0);
    w.status = status;
    return status;
  }

  void expect_exit_zero(const std::string& id) {
    int status = await_exit(id);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw Failure("worker " + id + " " + describe_exit(status) + ", expected status 0");
    }
  }

  std::string output(const std::string& id, const char* stream) const {
    std::ifstream in(dir_ + "/" + id + "." + stream);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
  }

  void dump_outputs() const {
    for (const auto& [id, w] : workers_) {
      std::cerr << "----- " << id << " stdout\n"
                << output(id, "out") << "----- " << id << " stderr\n"
                << output(id, "err");
    }
  }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& [id, w] : workers_) out.push_back(id);
    return out;
  }

 private:
  // Every run its own prefix: etcd outlives nothing, but keeps runs apart all the same.
  const std::string etcd_prefix_ = "/cohort-test/fake-launcher/" + std::to_string(::getpid()) + "/";

  std::unique_ptr<Store> open_store() {
    if (etcd_) {
      return std::make_unique<EtcdStore>(
          EtcdStoreOptions{.etcd = {.endpoints = {etcd_->endpoint()}, .timeout = kWait},
                           .prefix = etcd_prefix_ + kElasticScope + "/",
                           .secret = secret_});
    }
    server_.emplace("127.0.0.1", secret_);
    return std::make_unique<RendezvousClient>("127.0.0.1", server_->port(), secret_, kWait,
                                              kElasticScope);
  }

  void publish(const std::string& id, const std::string& assignment) {
    Worker& w = workers_.at(id);
    store_->set(assign_key(id, w.entry), assignment);
    ++w.entry;
  }

  std::string trainer_;
  std::string dir_;
  std::string secret_;
  cohort::testing::EtcdServer* etcd_;
  std::optional<RendezvousServer> server_;
  std::unique_ptr<Store> store_;
  std::map<std::string, Worker> workers_;
};

// "KEY=value" fields of the first line of `text` starting with `tag`, or nullopt.
std::vector<std::map<std::string, std::string>> tagged_lines(const std::string& text,
                                                             const std::string& tag) {
  std::vector<std::map<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(tag + " ", 0) != 0) continue;
    std::map<std::string, std::string> fields;
    std::istringstream words(line.substr(tag.size() + 1));
    std::string word;
    while (words >> word) {
      auto eq = word.find('=');
      if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    out.push_back(fields);
  }
  return out;
}

// The finished workers agree on the model, with the size and reset count expected of each.
void check_finals(const FakeLauncher& launcher, const std::map<std::string, int>& resets,
                  int size) {
  std::string checksum;
  for (const auto& [id, expected_resets] : resets) {
    auto finals = tagged_lines(launcher.output(id, "out"), "FINAL");
    if (finals.size() != 1) throw Failure("worker " + id + " printed no FINAL line");
    auto& f = finals[0];
    if (std::stoi(f["size"]) != size || std::stoi(f["resets"]) != expected_resets) {
      throw Failure("worker " + id + " finished with size " + f["size"] + " after " + f["resets"] +
                    " resets; expected size " + std::to_string(size) + " after " +
                    std::to_string(expected_resets));
    }
    if (!checksum.empty() && f["checksum"] != checksum) {
      throw Failure("worker " + id + "'s model (checksum " + f["checksum"] +
                    ") differs from the others' (" + checksum + ")");
    }
    checksum = f["checksum"];
  }
  std::cout << "fake_launcher: " << resets.size() << " workers finished with checksum " << checksum
            << std::endl;
}

// Every sample of every epoch appears in exactly one of rank 0's COMMITTED lines.
void check_exactly_once(const FakeLauncher& launcher) {
  using elastic_test::kEpochs;
  using elastic_test::kSamples;
  std::vector<std::vector<int>> count(kEpochs, std::vector<int>(kSamples, 0));
  for (const auto& id : launcher.ids()) {
    for (auto& line : tagged_lines(launcher.output(id, "out"), "COMMITTED")) {
      int epoch = std::stoi(line["epoch"]);
      if (epoch >= kEpochs) continue;  // the last commit opens an epoch that is never trained
      std::istringstream samples(line["samples"]);
      std::string s;
      while (std::getline(samples, s, ',')) {
        if (!s.empty()) ++count.at(epoch).at(std::stoull(s));
      }
    }
  }
  for (int e = 0; e < kEpochs; ++e) {
    for (uint64_t s = 0; s < kSamples; ++s) {
      if (count[e][s] != 1) {
        throw Failure("sample " + std::to_string(s) + " of epoch " + std::to_string(e) +
                      " was committed " + std::to_string(count[e][s]) + " times");
      }
    }
  }
  std::cout << "fake_launcher: every sample of " << kEpochs << " epochs committed exactly once"
            << std::endl;
}

// Starts w0, w1 and w2 (`victim`, if any, SIGKILLs itself at step 10 of round 0) and waits for
// their first check-ins.
void start_three(FakeLauncher& l, const std::string& victim) {
  for (const char* id : {"w0", "w1", "w2"}) {
    l.spawn(id, id == victim ? std::vector<std::string>{"10"} : std::vector<std::string>{});
  }
  for (const char* id : {"w0", "w1", "w2"}) l.await_checkin(id, Kind::kStart);
}

// `victim` dies; the survivors go on in their old order, the lowest of them as rank 0.
void kill_scenario(FakeLauncher& l, const std::string& victim) {
  start_three(l, victim);
  l.assign(0, 0, {"w0", "w1", "w2"});
  int status = l.await_exit(victim);
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    throw Failure("the victim " + victim + " " + describe_exit(status) + ", expected SIGKILL");
  }
  std::vector<std::string> survivors;
  for (const char* id : {"w0", "w1", "w2"}) {
    if (id != victim) survivors.push_back(id);
  }
  for (const auto& id : survivors) l.await_checkin(id, Kind::kFailed);
  l.assign(1, 0, survivors);
  for (const auto& id : survivors) l.expect_exit_zero(id);
  check_finals(l, {{survivors[0], 1}, {survivors[1], 1}}, 2);
  check_exactly_once(l);
}

void hosts_scenario(FakeLauncher& l) {
  start_three(l, "");
  l.notice(1);  // before round 0 starts: the first commit sees it, on every rank
  l.assign(0, 0, {"w0", "w1", "w2"});
  for (const char* id : {"w0", "w1", "w2"}) l.await_checkin(id, Kind::kInterrupted);
  l.spawn("w3");
  l.await_checkin("w3", Kind::kStart);
  l.notice(2);
  l.assign(1, 1, {"w0", "w1", "w2", "w3"});
  for (const char* id : {"w0", "w1", "w2", "w3"}) l.await_checkin(id, Kind::kInterrupted);
  l.assign_exit("w1");
  l.assign(2, 2, {"w0", "w2", "w3"});
  l.expect_exit_zero("w1");
  for (const char* id : {"w0", "w2", "w3"}) l.expect_exit_zero(id);
  if (!tagged_lines(l.output("w1", "out"), "FINAL").empty()) {
    throw Failure("w1 was assigned exit but trained to the end");
  }
  check_finals(l, {{"w0", 2}, {"w2", 2}, {"w3", 1}}, 3);
  check_exactly_once(l);
}

// A worker whose assignment never comes fails init() after the elastic timeout, naming the key.
void timeout_scenario(FakeLauncher& l) {
  l.spawn("w0", {}, "1");
  l.await_checkin("w0", Kind::kStart);
  int status = l.await_exit("w0");
  std::string err = l.output("w0", "err");
  std::string expected = "no assignment 'assign/w0/0' from the launcher";
  if (status == 0 || err.find(expected) == std::string::npos) {
    throw Failure("w0 " + describe_exit(status) + "; expected a failure saying \"" + expected +
                  "\"");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool on_etcd = argc == 5 && std::string(argv[3]) == "etcd";
  if (argc != 4 && !on_etcd) {
    std::cerr << "usage: fake_launcher kill|kill-rank0|hosts|timeout TRAINER [etcd] DIR"
              << std::endl;
    return 2;
  }
  std::string scenario = argv[1];
  std::optional<cohort::testing::EtcdServer> etcd;
  if (on_etcd) etcd.emplace();
  FakeLauncher launcher(argv[2], argv[argc - 1], etcd ? &*etcd : nullptr);
  try {
    if (scenario == "kill") {
      kill_scenario(launcher, "w1");
    } else if (scenario == "kill-rank0") {
      kill_scenario(launcher, "w0");
    } else if (scenario == "hosts") {
      hosts_scenario(launcher);
    } else if (scenario == "timeout") {
      timeout_scenario(launcher);
    } else {
      std::cerr << "fake_launcher: unknown scenario '" << scenario << "'" << std::endl;
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "fake_launcher " << scenario << " FAILED: " << e.what() << std::endl;
    launcher.dump_outputs();
    return 1;
  }
  std::cout << "fake_launcher " << scenario << ": passed" << std::endl;
  return 0;
}
