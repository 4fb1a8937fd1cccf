// Failure detection that keeps working while the background thread is blocked inside a
// collective: a thread of its own exchanges heartbeats with the other ranks over a TCP star of
// its own (rank 0 <-> every rank), every quarter of COHORT_PEER_TIMEOUT_SECONDS.
//
// Rank 0 watches every rank; every other rank watches rank 0. A watched rank that sends nothing
// for the peer timeout (frozen, overloaded, cut off) or whose connection closes (it died) fails
// the job: rank 0 tells every rank why, and each rank hands the reason (its verdict) to the
// runtime, which interrupts its data plane. Heartbeats never go through the data plane, so a
// collective may legitimately take far longer than the timeout.
//
// Rank 0's thread serves N-1 peers, so nothing it does per beat grows with N: the channel wakes it
// for the sockets that are ready (core/control_channel.h), a beat finds its rank and moves it in
// the order of silence in O(1), the next deadline is the front of that order (SilenceWatch), and
// the beats it sends are one encoded message queued to each peer, allocating nothing.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "core/control_channel.h"
#include "core/silence_watch.h"

namespace cohort {

class Heartbeat {
 public:
  // Called once, on the heartbeat thread, with the verdict, when this rank learns that the job
  // failed from its peers (not after fail()). Must return promptly.
  using OnFailure = std::function<void(const std::string& verdict)>;

  // `channel` is the connected heartbeat star seen from `rank`. Starts the thread.
  Heartbeat(ControlChannel channel, int rank, int size, std::chrono::microseconds timeout,
            OnFailure on_failure);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Thread-safe: this rank failed by itself. Tells the peers why (rank 0 tells every rank, the
  // others tell rank 0), closes the connections and stops watching. The first verdict stands.
  void fail(const std::string& reason);
  // Thread-safe: why the job failed, as far as this rank knows; waits up to `wait` for one.
  std::optional<std::string> verdict(std::chrono::milliseconds wait = {});
  // Says goodbye, so the peers take the closing connections for no failure, and stops.
  void stop();

 private:
  using Clock = SilenceWatch::Clock;

  void run();
  // One round: waits for messages or the next beat or deadline, then acts on what came.
  // Returns false once the thread is to end.
  bool step();
  // Returns false once the message ended the thread (a failure notice).
  bool handle(int peer, const std::vector<std::byte>& message, Clock::time_point now);
  // A peer's silence, closed connection or failure notice ends the job here.
  void peer_failed(const std::string& reason);
  void beat();
  // The watched rank silent longest, if silent for the timeout, described; nullopt if none.
  std::optional<std::string> find_silent() const;
  std::chrono::microseconds time_to_next_event() const;
  // Sends `message` to every connected peer, waiting briefly for it to leave; best effort.
  void send_to_all(const std::vector<std::byte>& message);
  bool record_verdict(const std::string& verdict);

  ControlChannel channel_;  // heartbeat thread only, but for wake()
  const int rank_;
  const std::chrono::microseconds timeout_;
  const std::chrono::microseconds interval_;
  OnFailure on_failure_;
  const std::vector<std::byte> beat_;  // the beat message, encoded once
  SilenceWatch watched_;               // heartbeat thread only
  Clock::time_point next_beat_;        // heartbeat thread only

  Mutex mutex_;
  CondVar verdict_cv_;
  std::optional<std::string> verdict_ GUARDED_BY(mutex_);
  // From fail(), not yet told to the peers.
  std::optional<std::string> local_failure_ GUARDED_BY(mutex_);
  bool stop_requested_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace cohort
