// Rank 0's negotiation cost at 2 ... 16,384 simulated ranks, in one process: the real
// Coordination (negotiator, response cache, fusion, stall inspector, core/coordination.h) takes
// the real encoded RequestLists of N-1 simulated workers (each built by a real CacheView) plus
// rank 0's own requests, and encodes the ResponseList it would send. Measured per cycle: rank 0's
// CPU time (decoding, negotiating, encoding; not the socket writes, which fanin_bench measures)
// and the bytes it receives and sends (encoded messages plus their 4-byte frame headers).
// Scenarios: cached (every rank submits the same cached tensors), first (new names every cycle),
// stall (the last rank lags one cycle behind, the stall inspector runs every cycle), join (the
// last rank has joined; the others go on), cached-leaders (the cached step with host leaders,
// COHORT_CONTROL_LEADERS=1: rank 0 hears its own host's ranks and one envelope per other host,
// built by the real leader merge code of --ranks-per-host identical lists, core/envelope.h, and
// sends its response once per leader and own-host rank). Run by bench/scale/run.sh; see
// docs/scaling.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/framed_socket.h"
#include "base/log.h"
#include "core/coordination.h"
#include "core/envelope.h"
#include "core/leader.h"
#include "scale_util.h"

namespace cohort::bench::scale {
namespace {

struct Options {
  int min_ranks = 2;
  int max_ranks = 16384;
  int tensors = 200;
  double min_seconds = 0.2;  // per size and scenario
  int max_cycles = 200;
  int ranks_per_host = 8;  // cached-leaders
  std::vector<std::string> scenarios{"cached", "first", "stall", "join"};
};

struct Cost {
  double cpu = 0, received = 0, sent = 0;
  int cycles = 0;
  double leader_cpu = 0, leader_up = 0;  // cached-leaders: one leader's envelope, summed
  int envelopes = 0;
};

// One simulated job: rank 0's Coordination and the cache view every simulated worker shares
// (they all submit the same requests, so their views stay identical).
struct Job {
  Job(int n, const Config& c, std::vector<int> leader_of = {})
      : size(n),
        downstream(n - 1),
        config(c),
        coordination(config, n, timeline, std::move(leader_of)) {}
  int size;
  int downstream;  // how many ranks rank 0 sends its response to
  Config config;
  Timeline timeline;  // disabled
  Coordination coordination;
  CacheView view;
};

std::vector<Request> model(const std::string& prefix, int tensors) {
  std::vector<Request> out;
  for (int i = 0; i < tensors; ++i) {
    out.push_back(Request{.name = prefix + "layer." + std::to_string(i) + ".weight",
                          .shape = {256 * (1 + i % 8), 64}});
  }
  return out;
}

// A worker's RequestList for `requests`, as its CacheView encodes it (hits where it can).
std::vector<std::byte> worker_list(CacheView& view, std::vector<Request> requests) {
  RequestList list;
  for (auto& r : requests) view.add(list, std::move(r));
  list.applied = view.applied();
  return encode(list);
}

// One cycle in which rank 0 receives `messages` and submits `own`.
void cycle(Job& job, std::vector<ControlMessage> messages, std::vector<Request> own, Cost& cost) {
  for (const auto& m : messages) {
    cost.received += static_cast<double>(m.payload.size() + net::kFrameHeaderSize);
  }
  double start = cpu_seconds();
  auto out = job.coordination.cycle(std::move(messages), std::move(own), false);
  std::vector<std::byte> bytes;
  if (out) bytes = encode(*out);
  cost.cpu += cpu_seconds() - start;
  if (!out) return;
  cost.sent += static_cast<double>(job.downstream * (bytes.size() + net::kFrameHeaderSize));
  ResponseList applied = decode_response_list(bytes);
  job.view.apply(applied);
}

// One cycle in which `senders` (ranks >= 1) each send `payload` and rank 0 submits `own`.
void cycle(Job& job, const std::vector<int>& senders, const std::vector<std::byte>& payload,
           std::vector<Request> own, Cost& cost) {
  std::vector<ControlMessage> messages;
  messages.reserve(senders.size());
  for (int rank : senders) messages.push_back({rank, payload});
  cycle(job, std::move(messages), std::move(own), cost);
}

// What rank 0 hears with host leaders of `k` ranks each when every rank sends `list`: its own
// host's ranks' lists, and each other leader's envelope, built as a leader builds it (its CPU
// time is the leader's, not rank 0's: counted apart).
std::vector<ControlMessage> leader_messages(int n, int k, const std::vector<std::byte>& list,
                                            Cost& cost) {
  std::vector<ControlMessage> messages;
  for (int r = 1; r < std::min(k, n); ++r) messages.push_back({r, list});
  for (int leader = k; leader < n; leader += k) {
    double start = cpu_seconds();
    EnvelopeBuilder up;
    for (int r = leader; r < std::min(leader + k, n); ++r) up.add(r, list);
    messages.push_back({leader, up.take()});
    cost.leader_cpu += cpu_seconds() - start;
    cost.leader_up += static_cast<double>(messages.back().payload.size());
    ++cost.envelopes;
  }
  return messages;
}

std::vector<int> ranks(int from, int to) {
  std::vector<int> out;
  for (int r = from; r <= to; ++r) out.push_back(r);
  return out;
}

// Repeats `one` (which adds one measured cycle's cost) until enough CPU time has passed.
Cost measure(const Options& o, const std::function<void(Cost&)>& one) {
  Cost cost;
  do {
    one(cost);
    ++cost.cycles;
  } while ((cost.cpu < o.min_seconds || cost.cycles < 2) && cost.cycles < o.max_cycles);
  return cost;
}

Cost run_leaders(const Options& o, int n) {
  int k = o.ranks_per_host;
  std::vector<int> leader_of(n);
  for (int r = 0; r < n; ++r) leader_of[r] = r - r % k;
  Job job(n, Config{}, leader_of);
  job.downstream = static_cast<int>(control_peers(0, leader_of).size());
  auto step = [&](Cost& c) {
    auto list = worker_list(job.view, model("", o.tensors));
    cycle(job, leader_messages(n, k, list, c), model("", o.tensors), c);
  };
  Cost warmup;
  step(warmup);
  return measure(o, step);
}

Cost run(const Options& o, const std::string& scenario, int n) {
  if (scenario == "cached-leaders") return run_leaders(o, n);
  Config config;
  if (scenario == "stall") config.stall_check_time = std::chrono::milliseconds(0);
  Job job(n, config);
  const int t = o.tensors;
  auto everyone = ranks(1, n - 1);
  if (scenario == "first") {
    int round = 0;
    return measure(o, [&](Cost& c) {
      std::string prefix = "c" + std::to_string(round++) + ".";
      cycle(job, everyone, worker_list(job.view, model(prefix, t)), model(prefix, t), c);
    });
  }
  Cost warmup;
  cycle(job, everyone, worker_list(job.view, model("", t)), model("", t), warmup);
  if (scenario == "cached") {
    return measure(o, [&](Cost& c) {
      cycle(job, everyone, worker_list(job.view, model("", t)), model("", t), c);
    });
  }
  if (scenario == "stall") {
    auto early = ranks(1, n - 2);
    return measure(o, [&](Cost& c) {
      auto payload = worker_list(job.view, model("", t));
      cycle(job, early, payload, model("", t), c);  // the last rank lags: nothing is ready
      cycle(job, {n - 1}, payload, {}, c);          // it catches up
    });
  }
  // join: the last rank has run out of data; the others go on without it.
  CacheView joined_view;
  cycle(job, {n - 1},
        worker_list(joined_view, {Request{.name = "cohort.join", .type = OpType::kJoin}}), {},
        warmup);
  auto rest = ranks(1, n - 2);
  return measure(
      o, [&](Cost& c) { cycle(job, rest, worker_list(job.view, model("", t)), model("", t), c); });
}

void report(const Options& o) {
  std::printf("# coordinator: rank 0's cost per cycle, %d tensors\n", o.tensors);
  std::printf("%-14s %6s %6s %14s %16s %16s\n", "scenario", "ranks", "cycles", "cpu_us_cycle",
              "recv_bytes_cycle", "sent_bytes_cycle");
  for (const auto& scenario : o.scenarios) {
    std::vector<double> x, cpu, bytes;
    for (int n : powers_of_two(o.min_ranks, o.max_ranks)) {
      Cost c = run(o, scenario, n);
      double per = 1.0 / c.cycles;
      std::printf("%-14s %6d %6d %14.1f %16.0f %16.0f\n", scenario.c_str(), n, c.cycles,
                  c.cpu * per * 1e6, c.received * per, c.sent * per);
      if (c.envelopes > 0) {
        std::printf("# leader of %d ranks: %.1f us and %.0f bytes up per envelope\n",
                    o.ranks_per_host, c.leader_cpu / c.envelopes * 1e6, c.leader_up / c.envelopes);
      }
      std::fflush(stdout);
      x.push_back(n), cpu.push_back(c.cpu * per), bytes.push_back((c.received + c.sent) * per);
    }
    std::printf("# fit %s: cpu ~ N^%.2f, bytes ~ N^%.2f (N >= 64)\n", scenario.c_str(),
                loglog_slope(x, cpu, 64), loglog_slope(x, bytes, 64));
  }
}

}  // namespace
}  // namespace cohort::bench::scale

int main(int argc, char** argv) {
  cohort::bench::scale::Options o;
  CLI::App app("Rank 0's negotiation cost with N simulated ranks");
  app.add_option("--min-ranks", o.min_ranks)->capture_default_str();
  app.add_option("--max-ranks", o.max_ranks)->capture_default_str();
  app.add_option("--tensors", o.tensors)->capture_default_str();
  app.add_option("--min-seconds", o.min_seconds, "CPU time per size and scenario")
      ->capture_default_str();
  app.add_option("--max-cycles", o.max_cycles)->capture_default_str();
  app.add_option("--scenarios", o.scenarios, "cached, first, stall, join, cached-leaders")
      ->capture_default_str();
  app.add_option("--ranks-per-host", o.ranks_per_host, "cached-leaders: ranks behind a leader")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cohort::log::set_level(cohort::log::Level::kError);  // the stall inspector's warnings
  cohort::bench::scale::report(o);
  return 0;
}
