// The workers of an elastic job as the launcher sees them: where each runs, which entry of the
// elastic protocol it is at, whether it has checked in, and its place in the current round. Pure
// bookkeeping with no processes or sockets; the job's event loop acts on what it says.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/clock.h"
#include "launcher/elastic_hosts.h"
#include "rendezvous/elastic_protocol.h"

namespace cohort::discovery {

struct ElasticWorker {
  int id = 0;
  SlotRef slot;
  int entry = 0;  // the entry it checks in with next, or has checked in with
  std::optional<rendezvous::CheckIn> checkin;  // its check-in for `entry`, once made
  std::optional<int> rank;                     // its rank in the last round it was assigned to
  int round = -1;                              // that round
  bool in_round = false;                       // a member of the current round that has not left it
  bool running = true;
  bool finished = false;                // exited 0 while still in the job
  bool leaving = false;                 // told to exit (or being stopped): its exit is no failure
  std::optional<TimePoint> leave_by;    // told to exit: SIGTERM if still running then
  std::optional<TimePoint> checkin_by;  // a new worker's first check-in is due by then

  // "worker 3 (rank 1 on localhost slot 1)"; before its first round "worker 3 (on ...)".
  std::string name() const;
  // Its output prefix: its rank while it is in a round, "w<id>" before its first one.
  std::string label() const;
};

class ElasticRoster {
 public:
  ElasticWorker& add(const SlotRef& slot);
  ElasticWorker* find(int id);
  // The workers of `ids`, in that order; every id must be known.
  std::vector<const ElasticWorker*> of(const std::vector<int>& ids) const;
  std::map<int, ElasticWorker>& all() { return workers_; }
  const std::map<int, ElasticWorker>& all() const { return workers_; }

  // A running worker other than `id` on `host`.
  bool others_running_on(const std::string& host, int id) const;
  // Running workers not told to exit and not finished, on slots `hosts` can use: the ones a
  // round waits for.
  // Without `newcomers`, only workers that had a rank in a round (rule 10, once a worker finished:
  // ElasticPolicy::takes_newcomers).
  std::vector<ElasticWorker*> wanted(const ElasticHosts& hosts, bool newcomers = true);
  // Running workers not finished and not leaving (slot usable or not): what plan_round() takes
  // as survivors. Members of the last round in rank order first, then the others by id.
  std::vector<ElasticWorker*> alive_in_order();
  static std::vector<SlotRef> slots_of(const std::vector<ElasticWorker*>& workers);
  ElasticWorker* on_slot(const SlotRef& slot);

 private:
  std::map<int, ElasticWorker> workers_;
  int next_id_ = 0;  // ids are never reused
};

}  // namespace cohort::discovery
