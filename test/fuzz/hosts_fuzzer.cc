// Host lists (-H), hostfiles and host-discovery script output (launcher/hosts.h,
// discovery/host_discovery.h). The first input byte picks the parser (and the default slot count
// for discovery output); every host accepted must be valid, with 1..4096 slots.
#include "base/host_port.h"
#include "discovery/host_discovery.h"
#include "launcher/hosts.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;
using namespace cohort::discovery;

namespace {

void check(const std::vector<HostSlots>& hosts) {
  for (const auto& h : hosts) {
    fuzz::require(net::valid_host_name(h.host) && h.slots >= 1 && h.slots <= 4096);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::text(data + 1, size - 1);
  fuzz::decode_or_refuse([&] {
    switch (data[0] % 3) {
      case 0:
        check(parse_host_list(text));
        break;
      case 1:
        check(parse_hostfile_text(text, "fuzz-hostfile"));
        break;
      default:
        check(parse_discovered_hosts(text, 1 + data[0] / 3 % 8));
        break;
    }
  });
  return 0;
}
