// measure_clock_offset: ping-pongs with rank 0, then one allgather of the stamps.
#include "comm/clock_offset.h"

#include <limits>
#include <vector>

#include "core/error.h"

namespace mpipe::comm {

ClockOffset measure_clock_offset(const Communicator& comm, const std::function<double()>& now,
                                 int rounds) {
  check(rounds >= 1, "measure_clock_offset: {} rounds", rounds);
  const Communicator pings = comm.split(0, comm.rank(), "the clock offset measurement");
  const int rank = pings.rank();
  const int size = pings.size();
  // Rank 0: the stamp of each ping, by rank (from 1) and round. Others: (t0, t1) of each round.
  std::vector<double> stamps;
  float payload[1] = {0.0f};
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      for (int round = 0; round < rounds; ++round) {
        pings.irecv(payload, peer, round, "a clock ping").wait();
        stamps.push_back(now());
        pings.isend(payload, peer, round, "a clock pong").wait();
      }
    }
  } else {
    for (int round = 0; round < rounds; ++round) {
      Request pong = pings.irecv(payload, 0, round, "a clock pong");
      const double sent = now();
      pings.isend(payload, 0, round, "a clock ping").wait();
      pong.wait();
      const double answered = now();
      stamps.push_back(sent);
      stamps.push_back(answered);
    }
  }
  const std::vector<double> all = pings.allgatherv(stamps);
  if (rank == 0) return {};
  // all: rank 0's (size - 1) * rounds stamps, then each other rank's 2 * rounds.
  const auto root_count = static_cast<size_t>((size - 1) * rounds);
  const auto base = root_count + static_cast<size_t>((rank - 1) * 2 * rounds);
  ClockOffset best{.offset_s = 0.0, .uncertainty_s = std::numeric_limits<double>::infinity()};
  for (int round = 0; round < rounds; ++round) {
    const double stamp = all[static_cast<size_t>((rank - 1) * rounds + round)];
    const double sent = all[base + static_cast<size_t>(2 * round)];
    const double answered = all[base + static_cast<size_t>(2 * round + 1)];
    const double half_round_trip = (answered - sent) / 2;
    if (half_round_trip < best.uncertainty_s) {
      best = {.offset_s = stamp - (sent + answered) / 2, .uncertainty_s = half_round_trip};
    }
  }
  return best;
}

}  // namespace mpipe::comm
