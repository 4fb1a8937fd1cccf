// The fields of the launcher's events (job_events.h) that several events share, built once so
// that every event spells them alike: a worker, how it exited, slots, a penalty.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"

namespace cohort::discovery {

// {"exit_code": 3} or {"signal": "SIGKILL"}, from a waitpid status.
nlohmann::json exit_fields(int status);

// ["a:0", "a:1"].
nlohmann::json slot_list(const std::vector<SlotRef>& slots);

// {"host": "a", "slot": 2 (or null: the whole host), "failures": 1, "cooldown_seconds": 4.5 (or
// null: for good)}.
nlohmann::json penalty_fields(const Penalized& penalized);

}  // namespace cohort::discovery
