// Draining: a worker asked to leave the job (SIGTERM, as a preempted machine gets, or
// request_drain()) trains on to its next commit. There every rank learns of it
// (check_host_updates) and raises HostsUpdatedInterrupt after the commit, so nothing committed
// is lost; the worker then checks in as drained, the launcher removes its host, and the worker
// is told to exit 0. docs/operations.md#draining gives the whole story and its time bound.
#pragma once

namespace cohort::elastic::detail {

// Makes SIGTERM request a drain instead of ending the process; a second SIGTERM ends it as the
// default action would. Idempotent. A handler the program installed itself is left in place (it
// may call request_drain()). The handler only stores a flag: it is async-signal-safe.
void install_drain_handler();

}  // namespace cohort::elastic::detail
