// Start-up agreement: before the first step every rank shows the others what it runs (mpipe
// version, MPI library, host) and compares its resolved config and layout with rank 0's, so a
// node with another binary or another config is refused with a message saying what differs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {

struct RankIdentity {
  std::string host;         // MPI_Get_processor_name
  std::string version;      // the mpipe version
  std::string mpi_library;  // the first line of MPI_Get_library_version
};

// This process's identity (`version` given by the program).
RankIdentity own_identity(const std::string& version);

// Collective over `world`: everyone's identity, by world rank. This must stay the first
// collective of every mpipe process and keep its format (one MPI_Allgather of fixed 256-byte
// fields: host, version, MPI library), so that ranks running different versions of mpipe still
// understand each other here and refuse to go on.
std::vector<RankIdentity> exchange_identities(const Communicator& world, const RankIdentity& mine);

// Nothing when every rank runs the mpipe version and MPI library of rank 0; else, for the lowest
// rank that differs: "rank 1 (host b): mpipe version 0.1.0-g12ab differs from rank 0's
// 0.1.0-g34cd (host a)".
std::optional<std::string> identity_mismatch(const std::vector<RankIdentity>& ranks);

// One thing every rank must have as rank 0 has it.
struct SameEverywhere {
  std::string what;  // "config"
  std::string mine;  // this rank's version of it, as text
  // Nothing when `mine` equals rank 0's `theirs`, else what differs ("train.steps is 7 here, 3
  // on rank 0"); null: plain comparison ("7 here, 3 on rank 0").
  std::function<std::optional<std::string>(const std::string& mine, const std::string& theirs)>
      difference;
};

// Collective over `world` (inside comm::agree): rank 0's texts are broadcast, and every rank
// whose `mine` differs fails with "rank 1 (host b): config differs from rank 0's: <difference>";
// every rank then throws AgreedError (code 2) with the lowest such rank's message.
void require_same_as_rank0(const Communicator& world, const std::vector<SameEverywhere>& things);

}  // namespace mpipe::comm
