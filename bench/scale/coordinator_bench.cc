// Rank 0's negotiation cost at 2 ... 16,384 simulated ranks, in one process: the real
// Coordination (negotiator, response cache, fusion, stall inspector, core/coordination.h) takes
// the real encoded RequestLists of N-1 simulated workers (each built by a real CacheView) plus
// rank 0's own requests, and encodes the ResponseList it would send. Measured per cycle: rank 0's
// CPU time (decoding, negotiating, encoding; not the socket writes, which fanin_bench measures)
// and the bytes it receives and sends (encoded messages plus their 4-byte frame headers).
// Scenarios: cached (every rank submits the same cached tensors), first (new names every cycle),
// stall (the last rank lags one cycle behind, the stall inspector runs every cycle), join (the
// last rank has joined; the others go on). Run by bench/scale/run.sh; see docs/scaling.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/framed_socket.h"
#include "base/log.h"
#include "core/coordination.h"
#include "scale_util.h"

namespace cohort::bench::scale {
namespace {

struct Options {
  int min_ranks = 2;
  int max_ranks = 16384;
  int tensors = 200;
  double min_seconds = 0.2;  // per size and scenario
  int max_cycles = 200;
  std::vector<std::string> scenarios{"cached", "first", "stall", "join"};
};

struct Cost {
  double cpu = 0, received = 0, sent = 0;
  int cycles = 0;
};

// One simulated job: rank 0's Coordination and the cache view every simulated worker shares
// (they all submit the same requests, so their views stay identical).
struct Job {
  Job(int n, const Config& c) : size(n), config(c), coordination(config, n, timeline) {}
  int size;
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

// One cycle in which `senders` (ranks >= 1) each send `payload` and rank 0 submits `own`.
void cycle(Job& job, const std::vector<int>& senders, const std::vector<std::byte>& payload,
           std::vector<Request> own, Cost& cost) {
  std::vector<ControlMessage> messages;
  messages.reserve(senders.size());
  for (int rank : senders) messages.push_back({rank, payload});
  double start = cpu_seconds();
  auto out = job.coordination.cycle(std::move(messages), std::move(own), false);
  std::vector<std::byte> bytes;
  if (out) bytes = encode(*out);
  cost.cpu += cpu_seconds() - start;
  cost.received += static_cast<double>(senders.size() * (payload.size() + net::kFrameHeaderSize));
  if (!out) return;
  cost.sent += static_cast<double>((job.size - 1) * (bytes.size() + net::kFrameHeaderSize));
  ResponseList applied = decode_response_list(bytes);
  job.view.apply(applied);
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

Cost run(const Options& o, const std::string& scenario, int n) {
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
  std::printf("%-8s %6s %6s %14s %16s %16s\n", "scenario", "ranks", "cycles", "cpu_us_cycle",
              "recv_bytes_cycle", "sent_bytes_cycle");
  for (const auto& scenario : o.scenarios) {
    std::vector<double> x, cpu, bytes;
    for (int n : powers_of_two(o.min_ranks, o.max_ranks)) {
      Cost c = run(o, scenario, n);
      double per = 1.0 / c.cycles;
      std::printf("%-8s %6d %6d %14.1f %16.0f %16.0f\n", scenario.c_str(), n, c.cycles,
                  c.cpu * per * 1e6, c.received * per, c.sent * per);
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
  app.add_option("--scenarios", o.scenarios)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  cohort::log::set_level(cohort::log::Level::kError);  // the stall inspector's warnings
  cohort::bench::scale::report(o);
  return 0;
}
