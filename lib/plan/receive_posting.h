// Receives posted ahead: which of a rank's receive ops the executor has posted when each op runs.
#pragma once

#include <vector>

#include "plan/op.h"

namespace mpipe::plan {

// How many receive ops the executor keeps posted beyond those it has consumed, at least, so the
// transfer of the next micro-batch overlaps the compute of the current one (more where the
// step's ranks would otherwise wait on each other forever: plan::receives_ahead). ZB-V's programs
// rely on it: a rank's message to itself is received among the two receives after its send, so the
// receive is posted before the send starts (Zbv.EverySelfMessageIsReceivedAmongTheNextTwoReceives).
inline constexpr int kReceivesAhead = 2;

// Per op i of `program`: how many of its receive ops, in program order, are posted when op i
// starts (Executor::train_step posts them then; the memory walk counts their buffers): every
// receive up to op i's own, and `ahead` beyond those consumed before op i, as far as there are.
std::vector<int> receives_posted(const Program& program, int ahead);

}  // namespace mpipe::plan
