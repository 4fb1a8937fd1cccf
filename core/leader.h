// A host leader's role (COHORT_CONTROL_LEADERS; core/role.h): the lowest rank of a host other
// than rank 0's, a host being what every rank's host identity names (host_names() in
// core/backend_factory.h, the one the shared-memory backends group by), wherever its ranks sit in
// the rank order. Its host's other ranks connect their control channel to it, and only it talks
// to rank 0, so that rank 0's fan-in is the number of hosts (docs/scaling.md).
//
// Up: whenever it has something (its own submissions or a list from one of its ranks) it sends
// rank 0 one envelope (core/envelope.h) of everything that arrived, each list tagged with its
// ranks, without waiting for the ranks that sent nothing. Down: a ResponseList from rank 0 goes to
// its ranks as the same bytes, then it runs the list itself (a Worker's part); an abort notice
// likewise. When it fails, its ranks hear why, and their connections close.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/control_channel.h"
#include "core/envelope.h"
#include "core/executor.h"
#include "core/role.h"
#include "core/worker.h"

namespace cohort {

// Each rank's host leader, from every rank's host (`hosts[r]` names rank r's): the lowest rank on
// its host. A host's ranks need not be consecutive.
std::vector<int> host_leaders(std::span<const std::string> hosts);
// Whether the ranks on `hosts` (every rank's host; empty where not gathered) take host leaders
// under COHORT_CONTROL_LEADERS=`setting`: 1 forces them, 0 the star; auto takes them where the
// world spans several hosts and some host has several ranks (some_host_shared(), as
// COHORT_HIERARCHICAL's auto), where a host's ranks gain a shorter way to rank 0 than its star.
bool leaders_wanted(Config::Hierarchy setting, const std::vector<std::string>& hosts);
// The ranks `leader` leads, itself included, in rank order.
std::vector<int> led_by(int leader, std::span<const int> leader_of);
// "rank 4", "ranks 2 to 3", "ranks 1, 4 to 6, 9": ascending `ranks` as log lines name them.
std::string describe_ranks(std::span<const int> ranks);
// The ranks whose control connection reaches `rank`: for rank 0, the other leaders and its own
// host's ranks; for another leader, its host's ranks; for any other rank, none.
std::vector<int> control_peers(int rank, std::span<const int> leader_of);

class Leader final : public Role {
 public:
  // `members`: the other ranks of its host, connected to `control`. `control`, `executor` and
  // `config` are the Runtime's, which outlive this role.
  Leader(const Config& config, int rank, std::vector<int> members, ControlChannel& control,
         Executor& executor);
  Leader(const Leader&) = delete;
  Leader& operator=(const Leader&) = delete;

  bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
            bool shutdown) override;
  std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const override {
    return idle;
  }
  // Tells its ranks that their leader failed and why; rank 0 sees the closed connection.
  void on_fail(const std::string& reason) override;

 private:
  // Sends the list to every member, then runs it; returns whether it was the last.
  bool forward_and_run(std::span<const std::byte> payload);

  const Config& config_;
  int rank_;
  std::vector<int> members_;
  ControlChannel& control_;
  Worker self_;  // this rank's own requests and execution
  EnvelopeBuilder up_;
};

}  // namespace cohort
