// When a rank's Link frees each send of a training step: at fixed ops of its program, so the
// sends it holds at every op follow from the op lists alone.
#pragma once

#include <vector>

#include "plan/op.h"
#include "plan/placement.h"

namespace mpipe::plan {

// Per op of programs[rank] (`programs` holds every rank's program of one step, its ranks and
// chunks placed as `placement` says): how many of the rank's sends of the step, in issue order,
// are released (completed and their tensors freed) once the op has run. A send is released
// - at the send op that makes it one more than plan::kSendsInFlight (Link::send waits for it),
// - or at the receive op after which it is known delivered: the rank has consumed a message its
//   peer sent after receiving it (its peer's receive is done, so completing it cannot wait),
// in order, each no sooner than every send before it; the rest at the step's end.
// Executor::train_step releases its link's sends at these ops (Link::release_sends), and the
// memory walk (rank_moments) counts the ones not yet released, so neither depends on when a
// receiver's MPI progresses.
std::vector<int> send_releases(const std::vector<Program>& programs, int rank,
                               const Placement& placement);

}  // namespace mpipe::plan
