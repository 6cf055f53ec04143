// Memory from the op list: one pass over a rank's program gives the moments its peak can be at.
#pragma once

#include <cstddef>
#include <vector>

#include "plan/memory_model.h"
#include "plan/op.h"
#include "plan/pipeline_config.h"
#include "plan/placement.h"
#include "plan/rank_messages.h"

namespace mpipe::plan {

// One candidate moment of a rank's peak: the chunk whose op runs, and what each of the rank's
// chunks holds then (one profile per chunk; the others are idle: plan::StashProfile::idle).
struct RankMoment {
  int chunk = 0;
  std::vector<plan::StashProfile> chunks;
};

// The candidate moments of rank `rank`'s peak, from one pass over programs[rank] (`programs`
// holds every rank's program of one step, as make_program gives them, its ranks and chunks
// placed as `placement` says: the schedule's, placement_for). The pass counts per chunk,
// at each op, the micro-batches forwarded and not yet input-backwarded (B or I), those past their
// I whose W has not run, and, on the last stage, the loss gradients waiting; what each micro-batch
// keeps follows from `recompute` (not kAuto). The running chunk's moments are:
// - at every input-backward op: the micro-batches in flight (that one included) kept as inputs
//   with one recomputed (always), in full (never), as every layer's input beside one in its
//   per-layer backward (per_layer), or, for except_last, as inputs beside the step's last
//   micro-batch in full (it is not recomputed);
// - per_layer, at a forward the chunk's next compute op after which is an input-backward: every
//   layer's input of the micro-batches in flight;
// - when no rank runs a forward after a backward (fill-drain), at the last forward: every
//   micro-batch stored, saved tensors being dropped unless kept in full;
// - on the last stage, after every forward: its loss computed (plan::StashProfile::loss), the
//   micro-batches in flight (that one included) kept as between ops.
// The other chunks keep their micro-batches in flight, waiting W work and loss gradients. A chunk
// with a WB op of every micro-batch (weight_grads: batched) holds every micro-batch's
// weight-gradient operands from its first input-backward op on; the WB op itself is no candidate
// (it holds the operands alone, less than that first input-backward). With a WB op per group
// (grouped), it holds a group's operands from the op that copies the group's first micro-batch's
// (its B, a filling moment like batched's first; or its W where backwards are split) to the
// group's WB op. Where backwards are split, each W op of a chunk that batches or groups is a
// moment: what the chunk keeps, the other micro-batches' W work, on the last stage the loss
// gradients waiting, and the W's walk over its layers, last first (StashProfile::weight_op: each
// layer copies the micro-batch's operands into the group's, which the group's first W allocates
// layer by layer, then frees the micro-batch's W work of that layer; no temporaries). The W op of
// a chunk that neither batches nor groups is no candidate: it allocates no operands and frees
// its W work layer by layer, so the chunk holds no more than before it. Every chunk's profile
// counts its own messages at the op, from the op lists (held_messages of `messages_by_rank`,
// step_messages's for `programs`): the receives the executor has posted and not consumed, and the
// sends its Link holds: those issued and not yet released at the ops send_releases gives (the last
// kSendsInFlight at most, from the oldest not known to be delivered on), where Executor::train_step
// releases them.
std::vector<RankMoment> rank_moments(const std::vector<Program>& programs, int rank,
                                     const Placement& placement,
                                     const std::vector<RankMessages>& messages_by_rank,
                                     Recompute recompute);

// Per op of a rank's `program`: the ops whose messages the rank holds while it runs (before a
// receive op consumes its own), in program order: the receives Executor::train_step has posted
// (`messages`: step_messages's for the rank) and not consumed, then the sends its Link holds:
// those issued before the op and not yet released (the link frees them at those ops, whenever MPI
// completed them).
std::vector<std::vector<size_t>> held_messages(const Program& program,
                                               const RankMessages& messages);

}  // namespace mpipe::plan
