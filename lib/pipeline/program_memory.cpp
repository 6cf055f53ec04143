// Memory from the op list: the candidate peak moments of a stage, from one pass over its program.
#include "pipeline/program_memory.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include "core/error.h"

namespace mpipe::pipeline {
namespace {

bool has_op(const Program& program, OpKind kind) {
  return std::ranges::any_of(program, [kind](const Op& op) { return op.kind == kind; });
}

// Whether the program runs a forward after an input-backward op.
bool interleaves(const Program& program) {
  bool backwarded = false;
  for (const Op& op : program) {
    if (op.kind == OpKind::kForward && backwarded) return true;
    backwarded = backwarded || is_input_backward(op.kind);
  }
  return false;
}

}  // namespace

std::vector<model::StashProfile> program_moments(const std::vector<Program>& programs, int stage,
                                                 Recompute recompute, bool batched_weight_grads,
                                                 int chunk) {
  check(recompute != Recompute::kAuto, "program_moments: recompute: auto is not resolved");
  Program program;
  std::ranges::copy_if(programs.at(static_cast<size_t>(stage)), std::back_inserter(program),
                       [chunk](const Op& op) { return op.chunk == chunk; });
  check(!program.empty(), "program_moments: rank {} runs no op of chunk {}", stage, chunk);
  const auto num_micro_batches = static_cast<int>(
      std::ranges::count_if(program, [](const Op& op) { return op.kind == OpKind::kForward; }));
  const int last_micro_batch = num_micro_batches - 1;
  const bool first = !has_op(program, OpKind::kRecvActivation);
  const bool last = !has_op(program, OpKind::kSendActivation);
  const bool splitting = has_op(program, OpKind::kBackwardInput);
  const bool interleaved = std::ranges::any_of(programs, interleaves);
  const int sends_at_backward = !interleaved ? 0 : !first && !last ? model::kSendsInFlight : 1;
  const int receives_ahead =
      interleaved ? model::kReceivesAhead : std::min(model::kReceivesAhead, last_micro_batch);

  std::vector<model::StashProfile> moments;
  int in_flight = 0, forwarded = 0, pending_weights = 0;
  bool last_in_flight = false, backward_begun = false;
  // A moment with the messages and counts every one shares at the current op.
  const auto moment = [&](bool backward) {
    model::StashProfile m;
    m.backward = backward;
    m.loss_grads = last ? in_flight - 1 : 0;
    m.receiving_activations = forwarded < num_micro_batches;
    m.receives_ahead = receives_ahead;
    m.sends = sends_at_backward;
    m.weight_grad_micro_batches = batched_weight_grads && backward_begun ? num_micro_batches : 0;
    m.pending_weight_micro_batches = pending_weights;
    m.splitting_backward = splitting;
    return m;
  };
  // per_layer: the moment after a forward, kept when an input-backward op follows it.
  std::optional<model::StashProfile> before_backward;
  for (const Op& op : program) {
    if (op.kind == OpKind::kForward || op.kind == OpKind::kBackwardWeight ||
        is_input_backward(op.kind)) {
      if (before_backward && is_input_backward(op.kind)) moments.push_back(*before_backward);
      before_backward.reset();
    }
    if (op.kind == OpKind::kBackwardWeight) --pending_weights;
    if (op.kind == OpKind::kForward) {
      ++in_flight;
      ++forwarded;
      last_in_flight = last_in_flight || op.micro_batch == last_micro_batch;
      if (recompute == Recompute::kPerLayer) {
        before_backward = moment(false);
        before_backward->layer_inputs = in_flight;
      }
      if (!interleaved && forwarded == num_micro_batches) {
        // The last forward of a fill-drain step: its saved tensors are dropped layer by layer
        // unless kept in full, and the latest outputs may not have been received yet.
        model::StashProfile m = moment(false);
        const int full = recompute == Recompute::kNever        ? in_flight
                         : recompute == Recompute::kExceptLast ? 1
                                                               : 0;
        m.inputs = recompute == Recompute::kPerLayer ? 0 : in_flight - full;
        m.full = full;
        m.layer_inputs = recompute == Recompute::kPerLayer ? in_flight : 0;
        m.discarding = full == 0;
        m.receives_ahead = model::kReceivesAhead;
        m.sends = last ? 0 : std::min(model::kSendsInFlight, last_micro_batch);
        moments.push_back(m);
      }
      continue;
    }
    if (!is_input_backward(op.kind)) continue;
    backward_begun = true;
    model::StashProfile m = moment(true);
    switch (recompute) {
      case Recompute::kNever:
        m.full = in_flight;
        break;
      case Recompute::kAlways:
        m.inputs = in_flight;
        m.recompute = true;
        break;
      case Recompute::kPerLayer:
        m.layer_inputs = in_flight - 1;
        m.layer_recompute = true;
        break;
      case Recompute::kExceptLast:
        m.full = last_in_flight ? 1 : 0;
        m.inputs = in_flight - m.full;
        m.recompute = op.micro_batch != last_micro_batch;
        if (last_in_flight && in_flight > 1) {
          // The last micro-batch in full beside an earlier one's recompute: every activation
          // received, the gradients of the others in flight left to come (some posted ahead).
          m.receiving_activations = false;
          m.receives_ahead = std::min(model::kReceivesAhead, in_flight - 1);
        }
        break;
      case Recompute::kAuto:
        break;
    }
    moments.push_back(m);
    --in_flight;
    if (op.micro_batch == last_micro_batch) last_in_flight = false;
    if (op.kind == OpKind::kBackwardInput) ++pending_weights;
  }
  return moments;
}

}  // namespace mpipe::pipeline
