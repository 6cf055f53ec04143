// Memory from the op list: one pass over a stage's program gives the moments its peak can be at.
#pragma once

#include <vector>

#include "model/memory_model.h"
#include "pipeline/op.h"
#include "pipeline/pipeline_config.h"

namespace mpipe::pipeline {

// The candidate moments of stage `stage`'s peak (the planner takes the largest), from one pass
// over programs[stage] (`programs` holds every stage's program of one step, as make_program
// gives them). The pass counts, at each op, the micro-batches forwarded and not yet
// input-backwarded (B or I), those past their I whose W has not run, and, on the last stage, the
// loss gradients waiting; what each micro-batch keeps follows from `recompute` (not kAuto):
// - at every input-backward op: the micro-batches in flight (that one included) kept as inputs
//   with one recomputed (always), in full (never), as every layer's input beside one in its
//   per-layer backward (per_layer), or, for except_last, as inputs beside the step's last
//   micro-batch in full (it is not recomputed);
// - per_layer, at every forward: every layer's input of the micro-batches in flight;
// - when no stage runs a forward after a backward (fill-drain), at the last forward: every
//   micro-batch stored, saved tensors being dropped unless kept in full, sends in flight.
// Messages (see model::StashProfile): while forwards remain, activations arrive; receives are
// posted kReceivesAhead ops ahead; in a pipeline whose stages interleave forwards and backwards a
// middle stage may have kSendsInFlight sends not yet taken at a backward (the first and last
// stage one), in a fill-drain pipeline none (the next stage took every activation before it sent
// the first gradient). With `batched_weight_grads` every micro-batch's weight-gradient operands
// are held from the first input-backward op on.
// With virtual stages (programs per rank, ops carrying chunks), `stage` is a rank and the pass
// counts only chunk `chunk`'s ops, a stage's program like any other (first or last by its own
// messages); whether the pipeline interleaves is read from the whole programs. A rank's peak is
// planned as the sum of its chunks' (an upper bound: they need not peak at the same op).
std::vector<model::StashProfile> program_moments(const std::vector<Program>& programs, int stage,
                                                 Recompute recompute, bool batched_weight_grads,
                                                 int chunk = 0);

}  // namespace mpipe::pipeline
