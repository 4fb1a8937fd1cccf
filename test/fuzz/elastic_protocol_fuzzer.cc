// Elastic check-ins and assignments (rendezvous/elastic_protocol.h) and the workers' reports
// (rendezvous/worker_reports.h), the texts workers and the launcher exchange through the
// rendezvous server. The first input byte picks the parser; what parses must format back to text
// that parses to the same thing.
#include "rendezvous/elastic_protocol.h"
#include "rendezvous/worker_reports.h"
#include "test/fuzz/fuzz_common.h"

using namespace cohort;
using namespace cohort::rendezvous;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text = fuzz::text(data + 1, size - 1);
  fuzz::decode_or_refuse([&] {
    if (data[0] % 4 == 2) {
      Progress p = parse_progress(text);
      fuzz::require(parse_progress(format_progress(p)) == p);
    } else if (data[0] % 4 == 3) {
      ResetReport r = parse_reset_report(text);
      fuzz::require(parse_reset_report(format_reset_report(r)) == r);
    } else if (data[0] & 1) {
      Assignment a = parse_assignment(text);
      Assignment b = parse_assignment(format_assignment(a));
      fuzz::require(a.exit == b.exit && a.round == b.round && a.placement == b.placement &&
                    a.generation == b.generation);
    } else {
      CheckIn c = parse_checkin(text);
      CheckIn d = parse_checkin(format_checkin(c));
      fuzz::require(c.kind == d.kind && c.reason == d.reason);
    }
  });
  return 0;
}
