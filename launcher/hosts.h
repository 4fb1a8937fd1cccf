// Hosts and slots: parsing -H and hostfiles, and placing ranks on slots.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/placement.h"
#include "base/read_file.h"

namespace cohort::discovery {

struct HostSlots {
  std::string host;
  int slots = 1;
  bool drain = false;  // a discovery script's "host:slots:drain": no new work, its workers leave
  bool operator==(const HostSlots&) const = default;
};

// The host one rank runs on, and its placement there.
struct SlotAssignment {
  std::string host;
  Placement placement;
};

// `s` without leading and trailing whitespace; shared by the hostfile and discovery-script parsers.
std::string_view trim(std::string_view s);

// A slot count between 1 and 4096; throws InvalidArgument starting with `context` otherwise.
int parse_slots(std::string_view text, const std::string& context);

// "host:slots,host,..." (slots default 1). Throws InvalidArgument naming the bad entry.
std::vector<HostSlots> parse_host_list(std::string_view text);
// Lines "host slots=N" (or just "host"); '#' starts a comment. Errors name the line number.
std::vector<HostSlots> parse_hostfile_text(std::string_view text, const std::string& origin);
// How a hostfile is read (base/read_file.h): a regular file or a pipe (`--hostfile <(...)`) of at
// most 1 MiB (ten thousand hosts' lines take about 300 KiB), a pipe's writer done within 10 s.
inline const files::ReadRule kHostfileRule{.what = "hostfile",
                                           .max_bytes = size_t{1} << 20,
                                           .pipes = true,
                                           .pipe_timeout = std::chrono::seconds(10)};
// The hostfile at `path` (--hostfile, OMPI_MCA_orte_default_hostfile). Throws InvalidArgument
// naming it when it cannot be read, is refused by kHostfileRule, or does not parse.
std::vector<HostSlots> read_hostfile(const std::string& path);

// Fills hosts in order, slot by slot, with `np` ranks. Throws if there are fewer slots than np.
std::vector<SlotAssignment> assign_slots(const std::vector<HostSlots>& hosts, int np);

// localhost, 127.0.0.1 (any 127.x) or this machine's host name.
bool is_local_host(const std::string& host);

}  // namespace cohort::discovery
