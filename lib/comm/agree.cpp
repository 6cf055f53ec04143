// The rank a failure agreed on came from, for its message.
#include "comm/agree.h"

#include <fmt/format.h>

#include "comm/watchdog.h"

namespace mpipe::comm {

std::string failure_prefix(const Communicator& comm) {
  const int world_rank = comm.world_rank(comm.rank());
  if (world_rank == 0) return "";
  const Watchdog* watchdog = comm.watchdog();
  return (watchdog ? watchdog->describe_rank(world_rank) : fmt::format("rank {}", world_rank)) +
         ": ";
}

}  // namespace mpipe::comm
