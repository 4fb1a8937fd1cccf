#include "static_job/static_job.h"

#include <memory>

#include "base/log.h"
#include "launcher/job_signals.h"
#include "launcher/worker_env.h"
#include "launcher/worker_launcher.h"
#include "rendezvous/hmac.h"
#include "rendezvous/server.h"
#include "static_job/supervisor.h"

namespace cohort::discovery {
namespace {

bool any_remote(const std::vector<SlotAssignment>& slots) {
  for (const auto& s : slots) {
    if (!is_local_host(s.host)) return true;
  }
  return false;
}

}  // namespace

int run_static_job(const HostManager& hosts, const StaticJobOptions& options) {
  int np = options.np > 0 ? options.np : hosts.total_slots();
  std::vector<SlotAssignment> slots = hosts.assign(np);
  // Every launcher is chosen before anything starts, so an unreachable host fails the job early.
  std::vector<std::unique_ptr<WorkerLauncher>> launchers;
  for (const auto& slot : slots) launchers.push_back(launcher_for(slot.host, options.launch));

  // Signals are blocked before the server's threads exist, so they all inherit the mask.
  Fd signals = block_job_signals();
  RendezvousEndpoint endpoint{rendezvous_bind_address(any_remote(slots)), 0,
                              rendezvous::random_bytes(rendezvous::kSecretSize)};
  rendezvous::RendezvousServer server(endpoint.addr, endpoint.secret,
                                      {.max_get_wait = options.start_timeout});
  endpoint.port = server.port();
  log::info("rendezvous server on ", endpoint.addr, ":", endpoint.port, "; starting ", np,
            " workers");
  OutputOptions output = options.output;
  output.rank_digits = static_cast<int>(std::to_string(np - 1).size());  // as horovodrun
  JobEvents events(options.events);
  events.emit("job_start", {{"launcher", "static"}, {"command", options.command}, {"np", np}});
  Supervisor supervisor(std::move(signals), options.term_grace, output, events);
  for (size_t i = 0; i < slots.size(); ++i) {
    try {
      int rank = slots[i].placement.rank;
      std::string who = "rank " + std::to_string(rank);
      auto towards = endpoint_towards(endpoint, slots[i].host, options.launch.network_interface);
      supervisor.add(rank, launchers[i]->launch(slots[i].host, who, options.command,
                                                worker_environment(slots[i], towards)));
    } catch (const Error& e) {
      supervisor.abort(e.what());  // the ranks already started must not be left running
      break;
    }
  }
  int code = supervisor.run();
  server.stop();
  return code;
}

}  // namespace cohort::discovery
