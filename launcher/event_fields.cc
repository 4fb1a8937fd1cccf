#include "launcher/event_fields.h"

#include <sys/wait.h>

#include <cstring>

namespace cohort::discovery {

nlohmann::json exit_fields(int status) {
  if (WIFSIGNALED(status)) {
    return {{"signal", std::string("SIG") + sigabbrev_np(WTERMSIG(status))}};
  }
  return {{"exit_code", WEXITSTATUS(status)}};
}

nlohmann::json slot_list(const std::vector<SlotRef>& slots) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : slots) list.push_back(s.host + ":" + std::to_string(s.slot));
  return list;
}

nlohmann::json penalty_fields(const Penalized& p) {
  nlohmann::json fields = {{"host", p.host}, {"failures", p.failures}};
  fields["slot"] = p.slot ? nlohmann::json(*p.slot) : nlohmann::json(nullptr);
  fields["cooldown_seconds"] =
      p.cooldown ? nlohmann::json(p.cooldown->count() / 1000.0) : nlohmann::json(nullptr);
  return fields;
}

}  // namespace cohort::discovery
