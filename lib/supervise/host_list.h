// The hosts a supervised job runs on (`--hosts h1:2,h2:2`): parsing, slots, mpirun's --host text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mpipe::supervise {

struct HostSlots {
  std::string host;
  int slots = 1;
};

// Parses `h1:2,h2:2,h3` (a host without `:N` has 1 slot), in order. Throws InputError naming
// `what` (e.g. "--hosts") and the bad entry: an empty list or name, a slot count that is not an
// integer from 1 to 4096, a host named twice.
std::vector<HostSlots> parse_host_list(std::string_view text, std::string_view what);

// `h1:2,h2:2`, as mpirun's --host takes it.
std::string host_list_text(const std::vector<HostSlots>& hosts);

int total_slots(const std::vector<HostSlots>& hosts);

}  // namespace mpipe::supervise
