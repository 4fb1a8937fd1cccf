// What a rank does in negotiation, besides collecting its own requests: rank 0 coordinates
// (core/coordinator.h), every other rank follows as a worker (core/worker.h). The Runtime picks
// the role once, when it joins, and its background thread calls it every cycle without asking
// which it is. Both roles end a cycle the same way: the ResponseLists rank 0 decided, run in the
// order it sent them, by Executor::execute.
//
// An abstract class rather than a std::variant of the two: the role is called a few times a
// cycle (never per tensor), so a virtual call costs nothing measurable, and the Runtime, and
// every includer of core/runtime.h, then needs neither role's members (the negotiator, the
// response cache, the cache view) nor their headers.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/control_channel.h"
#include "core/request.h"

namespace cohort {

class Role {
 public:
  virtual ~Role() = default;

  // One cycle: `messages` arrived on the control channel since the last, `fresh` are this rank's
  // requests collected in this cycle, `shutdown` says whether this rank has asked to shut down.
  // Returns true once it has run the last ResponseList (every rank asked to shut down, and every
  // rank has run it). Throws InternalError when the world is broken.
  virtual bool step(std::vector<ControlMessage> messages, std::vector<Request> fresh,
                    bool shutdown) = 0;
  // How long the background thread may wait for messages when nothing else is due, given that
  // the Runtime would wait `idle`.
  virtual std::chrono::microseconds wait_timeout(std::chrono::microseconds idle) const = 0;
  // The Runtime is failing with `reason` (its connections still open): tell whom the role must.
  virtual void on_fail(const std::string& reason) = 0;
};

}  // namespace cohort
