// Rank 0's table of submitted tensors: it records which rank asked for which name, decides when a
// name is ready on every rank, checks that all ranks described it the same way, and hands out
// responses in one order that every rank then executes.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/request.h"

namespace cohort {

class Negotiator {
 public:
  explicit Negotiator(int size);

  // Records that `rank` submitted `request`; returns how many ranks have now submitted its name.
  int add(int rank, Request request);
  // Records that `rank` will submit nothing more.
  void mark_shut_down(int rank);
  bool all_shut_down() const;

  // Responses for every name that is now ready on all ranks (or can never be), in the order in
  // which they became ready, allreduces fused up to `fusion_threshold` bytes (0: no fusion).
  // Removes them from the table.
  std::vector<Response> take_ready(size_t fusion_threshold = 0);

  size_t pending() const { return table_.size(); }

  using Clock = std::chrono::steady_clock;
  // The stall inspector's report: for each rank, the names (at most a few) that other ranks
  // submitted more than `after` ago and it has not. Empty when nothing has waited that long.
  std::string stall_report(Clock::time_point now, Clock::duration after) const;
  // Fails (kStalled responses) and removes every name that has waited longer than `after`.
  std::vector<Response> expire_stalled(Clock::time_point now, Clock::duration after);

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    int count = 0;
    Clock::time_point first_seen;
  };
  static constexpr size_t kNamesPerRank = 5;

  std::string missing_ranks(const Entry& entry) const;

  Response construct(const std::string& name, const Entry& entry) const;
  std::optional<std::string> orphaned_by_shutdown(const Entry& entry) const;

  int size_;
  std::map<std::string, Entry> table_;
  std::vector<std::string> ready_order_;
  std::vector<bool> shut_down_;
};

// Checks that every rank's request for one name agrees; returns the error message if not.
std::optional<std::string> find_mismatch(const std::string& name,
                                         const std::vector<std::optional<Request>>& by_rank);

}  // namespace cohort
