// The start and end of every mpipe process under MPI: the handshake that refuses ranks running
// another mpipe version or MPI library, and a watched barrier before MPI_Finalize.
#pragma once

#include <string>

#include "comm/communicator.h"

namespace mpipe::app {

// The version this process shows the others: build_version(), or $MPIPE_TEST_VERSION when set
// (only for the tests of the version check: it makes one rank look like another build).
std::string running_version();

// Collective over `world`, its first: exchanges every rank's identity; on a version or MPI library
// mismatch throws AgreedError (exit code 2) on every rank with the same one-line message. Then
// gives the world's watchdog every rank's host and a roll-call communicator, and has its waits
// sleep at once where this host runs more threads than it has CPUs or OMP_WAIT_POLICY is passive.
// (It arms the test hook MPIPE_TEST_STOP_AT first: core/test_stop.h, moment start-up.)
void start_up(const comm::Communicator& world);

// Collective over `world`: a barrier under the watchdog, so that a rank lost at the very end cannot
// hang MPI_Finalize; returns `code`. On a timeout logs the watchdog's line and aborts the job.
int leave(const comm::Communicator& world, int code);

}  // namespace mpipe::app
