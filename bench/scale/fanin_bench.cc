// Rank 0's fan-in at N ranks over loopback: the real ControlChannel (rank 0's control star) and
// the real Heartbeat thread (its heartbeat star) of rank 0, with N-1 simulated peers served by a
// few forked processes over raw sockets (hello, then frames, as core/control_channel.h's peers
// speak). Each cycle rank 0 sends every peer a cached ResponseList and waits for every peer's
// next cached RequestList (200 cache hits each way), as a cached training step does. Measured: the
// cycle's wall time, rank 0's CPU per cycle (its main thread: the control star), its heartbeat
// thread's CPU per second, and the round trip with one peer while the N-2 others are connected
// and idle (what a wake-up costs beside the sockets that are ready). Run by bench/scale/run.sh;
// see docs/scaling.md.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "base/framed_socket.h"
#include "cohort/errors.h"
#include "core/control_hello.h"
#include "core/heartbeat.h"
#include "core/request.h"
#include "scale_util.h"

namespace cohort::bench::scale {
namespace {

using std::chrono::milliseconds;

struct Options {
  std::vector<int> ranks{64, 128, 256, 512, 1024};
  int procs = 4;  // processes serving the simulated peers
  int tensors = 200;
  double min_seconds = 1.0;  // per size
  int peer_timeout_ms = 2000;
};

const std::string kToken = "fanin-bench";

struct Endpoint {
  std::string host;
  int port;
};

Endpoint parse(const std::string& address) {
  auto colon = address.rfind(':');
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}

std::string_view view(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::vector<std::byte> framed(const std::vector<std::byte>& payload) {
  std::vector<std::byte> out;
  net::append_frame(out, payload);
  return out;
}

Fd connect_as(int rank, const Endpoint& at) {
  auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  Fd fd = net::connect_tcp(at.host, at.port, deadline);
  net::write_frame(fd.get(), view(encode_control_hello({rank, kToken})), deadline);
  return fd;
}

// A simulated peer's two connections and what has arrived on them.
struct SimPeer {
  Fd control, heartbeat;
  std::vector<std::byte> in;
};

// Reads what `fd` has; false once it is closed.
bool drain(int fd, std::vector<std::byte>* keep) {
  std::byte buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (keep) keep->insert(keep->end(), buf, buf + n);
  }
}

// The child: answers each response on a control connection with `request` and beats on every
// heartbeat connection every `interval`, until rank 0 closes the control connections.
[[noreturn]] void serve(std::vector<int> ranks, Endpoint control, Endpoint heartbeat,
                        std::vector<std::byte> request, milliseconds interval) {
  std::vector<SimPeer> peers;
  for (int rank : ranks) peers.push_back({connect_as(rank, control), connect_as(rank, heartbeat)});
  Fd ep(::epoll_create1(0));
  for (size_t i = 0; i < peers.size(); ++i) {
    epoll_event e{.events = EPOLLIN, .data = {.u64 = i}};
    ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, peers[i].control.get(), &e);
    e.data.u64 = i | (uint64_t{1} << 32);
    ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, peers[i].heartbeat.get(), &e);
  }
  auto reply = framed(request), beat = framed({std::byte{1}});
  auto next_beat = SteadyClock::now();
  size_t open = peers.size();
  std::vector<epoll_event> events(256);
  while (open > 0) {
    if (SteadyClock::now() >= next_beat) {
      auto deadline = SteadyClock::now() + interval;
      try {
        for (auto& p : peers) net::write_all(p.heartbeat.get(), view(beat), deadline);
      } catch (const Error&) {
        // Rank 0's heartbeat ended before its control connections: they say when to stop.
      }
      next_beat = SteadyClock::now() + interval;
    }
    int n = ::epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()),
                         static_cast<int>(interval.count() / 4));
    for (int k = 0; k < n; ++k) {
      auto& p = peers[events[k].data.u64 & 0xffffffff];
      if (events[k].data.u64 >> 32) {
        drain(p.heartbeat.get(), nullptr);
        continue;
      }
      if (!drain(p.control.get(), &p.in)) {
        ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, p.control.get(), nullptr);
        --open;
      }
      auto deadline = SteadyClock::now() + std::chrono::seconds(30);
      try {
        for (size_t f = net::take_frames(p.in, 64u << 20).size(); f > 0; --f) {
          net::write_all(p.control.get(), view(reply), deadline);
        }
      } catch (const Error&) {
        // Rank 0 closed the connection while the reply left: the bench is over for this peer,
        // and the next read says so.
      }
    }
  }
  std::_Exit(0);
}

struct Result {
  int cycles = 0;
  double wall = 0, cpu = 0, heartbeat_cpu = 0;
  double one_peer = 0;  // seconds per round trip with one peer, the others idle
};

std::vector<std::byte> request_list(int tensors) {
  RequestList list;
  for (int i = 0; i < tensors; ++i) list.hits.push_back(static_cast<uint32_t>(i + 1) << 1);
  return encode(list);
}

std::vector<std::byte> response_list(int tensors) {
  Response r;
  for (int i = 0; i < tensors; ++i) {
    r.names.emplace_back();
    r.cache_ids.push_back(static_cast<uint32_t>(i + 1) << 1);
    r.counts.push_back(16384);
  }
  return encode(ResponseList{.responses = {std::move(r)}});
}

// One cycle: the response to every peer, then every peer's next request.
void cycle(ControlChannel& control, int n, const std::vector<std::byte>& response) {
  for (int peer = 1; peer < n; ++peer) control.send(peer, response);
  control.flush(milliseconds(30000));
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  for (int got = 0; got < n - 1;) {
    if (SteadyClock::now() > deadline) throw InternalError("fanin_bench: a cycle took over 30 s");
    got += static_cast<int>(control.wait(std::chrono::seconds(1)).size());
  }
}

// Round trips with rank 1 alone, the N-2 others idle: seconds per round trip.
double one_peer_round_trips(ControlChannel& control, const std::vector<std::byte>& response,
                            double min_seconds) {
  double start = wall_seconds();
  int trips = 0;
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  do {
    control.send(1, response);
    for (size_t got = 0; got == 0;) {
      if (SteadyClock::now() > deadline) throw InternalError("fanin_bench: a round trip hung");
      got = control.wait(std::chrono::seconds(1)).size();
    }
    ++trips;
  } while (wall_seconds() - start < min_seconds || trips < 20);
  return (wall_seconds() - start) / trips;
}

Result run(const Options& o, int n) {
  auto control = ControlChannel::listen("127.0.0.1", n, kToken, "control");
  auto heartbeat = ControlChannel::listen("127.0.0.1", n, kToken, "heartbeat");
  milliseconds timeout(o.peer_timeout_ms);
  std::vector<pid_t> children;
  int procs = std::min(o.procs, n - 1);
  for (int c = 0; c < procs; ++c) {
    std::vector<int> ranks;
    for (int r = 1 + c; r < n; r += procs) ranks.push_back(r);
    pid_t pid = ::fork();
    if (pid == 0) {
      serve(ranks, parse(control.address()), parse(heartbeat.address()), request_list(o.tensors),
            timeout / 4);
    }
    children.push_back(pid);
  }
  control.accept_workers(milliseconds(120000));
  heartbeat.accept_workers(milliseconds(120000));
  Result r;
  {
    Heartbeat beats(std::move(heartbeat), 0, n, timeout, [](const std::string& verdict) {
      std::fprintf(stderr, "fanin_bench: heartbeat verdict: %s\n", verdict.c_str());
    });
    auto response = response_list(o.tensors);
    for (int i = 0; i < 3; ++i) cycle(control, n, response);  // warm-up
    double wall = wall_seconds(), cpu = cpu_seconds(), all = cpu_seconds(true);
    do {
      cycle(control, n, response);
      ++r.cycles;
    } while (wall_seconds() - wall < o.min_seconds || r.cycles < 5);
    r.wall = wall_seconds() - wall;
    r.cpu = cpu_seconds() - cpu;
    // The process's CPU less the main thread's: the heartbeat thread (both clocks tick in
    // scheduler ticks, so a tiny figure can come out slightly negative: reported as 0).
    r.heartbeat_cpu = cpu_seconds(true) - all - r.cpu;
    r.one_peer = one_peer_round_trips(control, response, o.min_seconds / 4);
    beats.stop();
  }
  control = ControlChannel();  // closed: the children end
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  return r;
}

void report(const Options& o) {
  std::printf(
      "# fanin: rank 0's control and heartbeat stars over loopback, %d tensors cached, "
      "peer timeout %d ms\n",
      o.tensors, o.peer_timeout_ms);
  std::printf("%6s %6s %6s %14s %14s %16s %14s\n", "ranks", "procs", "cycles", "latency_us",
              "cpu_us_cycle", "hb_cpu_us_per_s", "one_peer_us");
  std::vector<double> x, latency, cpu;
  for (int n : o.ranks) {
    Result r = run(o, n);
    std::printf("%6d %6d %6d %14.1f %14.1f %16.1f %14.1f\n", n, std::min(o.procs, n - 1), r.cycles,
                r.wall / r.cycles * 1e6, r.cpu / r.cycles * 1e6,
                std::max(0.0, r.heartbeat_cpu) / r.wall * 1e6, r.one_peer * 1e6);
    std::fflush(stdout);
    x.push_back(n), latency.push_back(r.wall / r.cycles), cpu.push_back(r.cpu / r.cycles);
  }
  std::printf("# fit fanin: latency ~ N^%.2f, cpu ~ N^%.2f\n", loglog_slope(x, latency),
              loglog_slope(x, cpu));
}

}  // namespace
}  // namespace cohort::bench::scale

int main(int argc, char** argv) {
  cohort::bench::scale::Options o;
  CLI::App app("Rank 0's control and heartbeat fan-in with N simulated peers over loopback");
  app.add_option("--ranks", o.ranks)->capture_default_str();
  app.add_option("--procs", o.procs, "processes serving the peers")->capture_default_str();
  app.add_option("--tensors", o.tensors)->capture_default_str();
  app.add_option("--min-seconds", o.min_seconds, "wall time per size")->capture_default_str();
  app.add_option("--peer-timeout-ms", o.peer_timeout_ms)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  cohort::bench::scale::report(o);
  return 0;
}
