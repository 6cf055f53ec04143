// Start-up agreement: identities exchanged in fixed-size records, and texts compared with rank 0's.
#include "comm/handshake.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "comm/agree.h"
#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

constexpr size_t kFieldBytes = 256;  // each field of a record, NUL-padded (at most 255 chars)
constexpr size_t kFields = 3;

// "rank 1 (host b)" from the identities alone.
std::string describe(const std::vector<RankIdentity>& ranks, size_t rank) {
  return fmt::format("rank {} (host {})", rank, ranks[rank].host);
}

}  // namespace

RankIdentity own_identity(const std::string& version) {
  std::array<char, MPI_MAX_PROCESSOR_NAME> host{};
  int length = 0;
  check_mpi(MPI_Get_processor_name(host.data(), &length), "MPI_Get_processor_name");
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> library{};
  int library_length = 0;
  check_mpi(MPI_Get_library_version(library.data(), &library_length), "MPI_Get_library_version");
  std::string mpi_library(library.data(), static_cast<size_t>(library_length));
  mpi_library = mpi_library.substr(0, mpi_library.find_first_of(",\n"));
  return {.host = std::string(host.data(), static_cast<size_t>(length)),
          .version = version,
          .mpi_library = mpi_library};
}

std::vector<RankIdentity> exchange_identities(const Communicator& world, const RankIdentity& mine) {
  std::vector<char> record(kFields * kFieldBytes, '\0');
  const std::array<const std::string*, kFields> fields = {&mine.host, &mine.version,
                                                          &mine.mpi_library};
  for (size_t f = 0; f < kFields; ++f) {
    const size_t length = std::min(fields[f]->size(), kFieldBytes - 1);
    std::copy_n(fields[f]->data(), length, record.begin() + static_cast<long>(f * kFieldBytes));
  }
  const std::vector<char> all = world.allgather(record);
  std::vector<RankIdentity> ranks;
  for (size_t offset = 0; offset < all.size(); offset += record.size()) {
    auto field = [&](size_t f) { return std::string(all.data() + offset + f * kFieldBytes); };
    ranks.push_back({.host = field(0), .version = field(1), .mpi_library = field(2)});
  }
  return ranks;
}

std::optional<std::string> identity_mismatch(const std::vector<RankIdentity>& ranks) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].version != ranks[0].version) {
      return fmt::format("{}: mpipe version {} differs from rank 0's {} (host {})",
                         describe(ranks, r), ranks[r].version, ranks[0].version, ranks[0].host);
    }
    if (ranks[r].mpi_library != ranks[0].mpi_library) {
      return fmt::format("{}: MPI library '{}' differs from rank 0's '{}' (host {})",
                         describe(ranks, r), ranks[r].mpi_library, ranks[0].mpi_library,
                         ranks[0].host);
    }
  }
  return std::nullopt;
}

void require_same_as_rank0(const Communicator& world, const std::vector<SameEverywhere>& things) {
  // Every rank takes part in every broadcast before anyone compares (and perhaps throws).
  std::vector<std::string> rank0;
  for (const SameEverywhere& thing : things) {
    rank0.push_back(thing.mine);
    world.broadcast(rank0.back(), 0);
  }
  agree(world, [&] {
    for (size_t i = 0; i < things.size(); ++i) {
      const SameEverywhere& thing = things[i];
      std::optional<std::string> difference;
      if (thing.difference) {
        difference = thing.difference(thing.mine, rank0[i]);
      } else if (thing.mine != rank0[i]) {
        difference = fmt::format("{} here, {} on rank 0", thing.mine, rank0[i]);
      }
      check_input(!difference, "{} differs from rank 0's: {}", thing.what, difference.value_or(""));
    }
  });
}

}  // namespace mpipe::comm
