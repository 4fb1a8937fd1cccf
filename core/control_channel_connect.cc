// The control channel's outgoing connections (ControlChannel::connect and connect_up in
// core/control_channel.h): a rank's connection to rank 0, or to its host's leader, and a leader's
// to rank 0. Accepting is in core/control_channel.cc.
#include <optional>
#include <string>
#include <utility>

#include "base/framed_socket.h"
#include "base/host_port.h"
#include "base/net.h"
#include "cohort/errors.h"
#include "core/control_channel.h"
#include "core/control_hello.h"

namespace cohort {

using std::chrono::milliseconds;

Fd ControlChannel::open_connection(int rank, int to, const std::string& address,
                                   const std::string& token, milliseconds timeout,
                                   const std::string& label, const Cancellation* cancel) {
  auto colon = address.rfind(':');
  auto port = colon == std::string::npos
                  ? std::nullopt
                  : net::parse_port(std::string_view(address).substr(colon + 1));
  if (!port) throw InternalError("bad " + label + " address '" + address + "'");
  std::string host = address.substr(0, colon);
  std::string target = "rank " + std::to_string(to) + " at " + address;
  auto deadline = SteadyClock::now() + timeout;
  auto hello = encode_control_hello({rank, token});
  try {
    // Retried while refused: the peer publishes its address only after it listens, a race.
    Fd fd = net::connect_tcp(host, *port, deadline, cancel);
    net::write_frame(fd.get(), {reinterpret_cast<const char*>(hello.data()), hello.size()},
                     deadline, cancel);
    return fd;
  } catch (const InternalError&) {
    throw;  // cancelled
  } catch (const Error& e) {
    if (SteadyClock::now() >= deadline) {
      throw InternalError("timed out opening the " + label + " connection to " + target +
                          " (within " + std::to_string(timeout.count()) + " ms)");
    }
    throw InternalError("cannot open the " + label + " connection to " + target + ": " + e.what());
  }
}

ControlChannel ControlChannel::connect(int rank, int size, const std::string& address,
                                       const std::string& token, milliseconds timeout,
                                       std::string label, const Cancellation* cancel, int to) {
  ControlChannel ch;
  ch.size_ = size;
  ch.label_ = std::move(label);
  ch.open_events();
  ch.peers_.resize(1);
  ch.peers_[0].rank = to;
  ch.rank_ = rank;
  ch.peers_[0].fd = open_connection(rank, to, address, token, timeout, ch.label_, cancel);
  ch.watch(0);
  return ch;
}

void ControlChannel::connect_up(int rank, const std::string& address, const std::string& token,
                                milliseconds timeout, const Cancellation* cancel) {
  rank_ = rank;
  peers_[0].fd = open_connection(rank, 0, address, token, timeout, label_, cancel);
  watch(0);
}

}  // namespace cohort
