// Memory from the op list: the candidate peak moments of a rank, from one pass over its program.
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

// What the rank's messages are at a moment: how many sends a backward may find in flight and how
// many receives are posted ahead.
struct Messages {
  bool interleaved = false;
  int sends_at_backward = 0;
};

// One chunk's micro-batches, counted op by op over its ops in the rank's program.
class ChunkWalk {
 public:
  ChunkWalk(const Program& rank_program, int chunk, Recompute recompute, bool batched,
            const Messages& messages)
      : recompute_(recompute), batched_(batched), messages_(messages) {
    Program program;
    std::ranges::copy_if(rank_program, std::back_inserter(program),
                         [chunk](const Op& op) { return op.chunk == chunk; });
    num_micro_batches_ = static_cast<int>(
        std::ranges::count_if(program, [](const Op& op) { return op.kind == OpKind::kForward; }));
    last_ = !has_op(program, OpKind::kSendActivation);
    splitting_ = has_op(program, OpKind::kBackwardInput);
    receives_ahead_ = messages.interleaved
                          ? model::kReceivesAhead
                          : std::min(model::kReceivesAhead, num_micro_batches_ - 1);
  }

  // The moments of op `op` of this chunk (running it), and under per-layer recompute the moment
  // after a forward, which counts if the chunk's next compute op is an input-backward.
  struct Found {
    std::vector<model::StashProfile> now;
    std::optional<model::StashProfile> before_backward;
  };
  Found run(const Op& op) {
    Found found;
    if (op.kind == OpKind::kBackwardWeight) --pending_weights_;
    if (op.kind == OpKind::kForward) {
      forward(op, found);
    } else if (is_input_backward(op.kind)) {
      found.now.push_back(input_backward(op));
    }
    return found;
  }

  // What the chunk holds while another chunk of its rank runs: its micro-batches in flight as
  // the recompute mode keeps them, their W work and loss gradients; no temporaries, no messages.
  model::StashProfile idle() const {
    model::StashProfile m = common();
    m.idle = true;
    m.backward = false;
    m.loss_grads = last_ ? in_flight_ : 0;
    switch (recompute_) {
      case Recompute::kNever:
        m.full = in_flight_;
        break;
      case Recompute::kAlways:
        m.inputs = in_flight_;
        break;
      case Recompute::kPerLayer:
        m.layer_inputs = in_flight_;
        break;
      case Recompute::kExceptLast:
        m.full = last_in_flight_ ? 1 : 0;
        m.inputs = in_flight_ - m.full;
        break;
      case Recompute::kAuto:
        break;
    }
    return m;
  }

 private:
  int last_micro_batch() const { return num_micro_batches_ - 1; }

  // What every moment of the chunk shares at the current op.
  model::StashProfile common() const {
    model::StashProfile m;
    m.weight_grad_micro_batches = batched_ && backward_begun_ ? num_micro_batches_ : 0;
    m.pending_weight_micro_batches = pending_weights_;
    m.splitting_backward = splitting_;
    return m;
  }

  // A moment of this chunk running an op, with the rank's messages.
  model::StashProfile running(bool backward) const {
    model::StashProfile m = common();
    m.backward = backward;
    m.loss_grads = last_ ? in_flight_ - 1 : 0;
    m.receiving_activations = forwarded_ < num_micro_batches_;
    m.receives_ahead = receives_ahead_;
    m.sends = messages_.sends_at_backward;
    return m;
  }

  void forward(const Op& op, Found& found) {
    ++in_flight_;
    ++forwarded_;
    last_in_flight_ = last_in_flight_ || op.micro_batch == last_micro_batch();
    if (recompute_ == Recompute::kPerLayer) {
      found.before_backward = running(false);
      found.before_backward->layer_inputs = in_flight_;
    }
    if (!messages_.interleaved && forwarded_ == num_micro_batches_) {
      // The last forward of a fill-drain step: its saved tensors are dropped layer by layer
      // unless kept in full, and the latest outputs may not have been received yet.
      model::StashProfile m = running(false);
      const int full = recompute_ == Recompute::kNever        ? in_flight_
                       : recompute_ == Recompute::kExceptLast ? 1
                                                              : 0;
      m.inputs = recompute_ == Recompute::kPerLayer ? 0 : in_flight_ - full;
      m.full = full;
      m.layer_inputs = recompute_ == Recompute::kPerLayer ? in_flight_ : 0;
      m.discarding = full == 0;
      m.receives_ahead = model::kReceivesAhead;
      m.sends = last_ ? 0 : std::min(model::kSendsInFlight, last_micro_batch());
      found.now.push_back(m);
    }
  }

  model::StashProfile input_backward(const Op& op) {
    backward_begun_ = true;
    model::StashProfile m = running(true);
    switch (recompute_) {
      case Recompute::kNever:
        m.full = in_flight_;
        break;
      case Recompute::kAlways:
        m.inputs = in_flight_;
        m.recompute = true;
        break;
      case Recompute::kPerLayer:
        m.layer_inputs = in_flight_ - 1;
        m.layer_recompute = true;
        break;
      case Recompute::kExceptLast:
        m.full = last_in_flight_ ? 1 : 0;
        m.inputs = in_flight_ - m.full;
        m.recompute = op.micro_batch != last_micro_batch();
        if (last_in_flight_ && in_flight_ > 1) {
          // The last micro-batch in full beside an earlier one's recompute: every activation
          // received, the gradients of the others in flight left to come (some posted ahead).
          m.receiving_activations = false;
          m.receives_ahead = std::min(model::kReceivesAhead, in_flight_ - 1);
        }
        break;
      case Recompute::kAuto:
        break;
    }
    --in_flight_;
    if (op.micro_batch == last_micro_batch()) last_in_flight_ = false;
    if (op.kind == OpKind::kBackwardInput) ++pending_weights_;
    return m;
  }

  Recompute recompute_;
  bool batched_;
  Messages messages_;
  int num_micro_batches_ = 0, receives_ahead_ = 0;
  bool last_ = false, splitting_ = false;
  int in_flight_ = 0, forwarded_ = 0, pending_weights_ = 0;
  bool last_in_flight_ = false, backward_begun_ = false;
};

int num_chunks(const Program& program) {
  int chunks = 1;
  for (const Op& op : program) chunks = std::max(chunks, op.chunk + 1);
  return chunks;
}

}  // namespace

std::vector<RankMoment> rank_moments(const std::vector<Program>& programs, int rank,
                                     Recompute recompute, bool batched_weight_grads) {
  check(recompute != Recompute::kAuto, "rank_moments: recompute: auto is not resolved");
  const Program& program = programs.at(static_cast<size_t>(rank));
  // The rank's Link: the first rank receives no activation, the last sends none.
  const bool first = !has_op(program, OpKind::kRecvActivation);
  const bool last = !has_op(program, OpKind::kSendActivation);
  Messages messages;
  messages.interleaved = std::ranges::any_of(programs, interleaves);
  messages.sends_at_backward = !messages.interleaved ? 0
                               : !first && !last     ? model::kSendsInFlight
                                                     : 1;
  const int chunks = num_chunks(program);
  std::vector<ChunkWalk> walks;
  for (int c = 0; c < chunks; ++c) {
    walks.emplace_back(program, c, recompute, batched_weight_grads, messages);
  }
  // With chunk `chunk` running in moment `running`, the others idle.
  const auto with_others = [&](int chunk, const model::StashProfile& running) {
    RankMoment m{.chunk = chunk, .chunks = {}};
    for (int c = 0; c < chunks; ++c) {
      m.chunks.push_back(c == chunk ? running : walks[static_cast<size_t>(c)].idle());
    }
    return m;
  };
  std::vector<RankMoment> moments;
  // Per chunk, per_layer: the moment after its last forward, kept when its next compute op is
  // an input-backward.
  std::vector<std::optional<RankMoment>> before_backward(static_cast<size_t>(chunks));
  for (const Op& op : program) {
    std::optional<RankMoment>& deferred = before_backward[static_cast<size_t>(op.chunk)];
    if (op.kind == OpKind::kForward || op.kind == OpKind::kBackwardWeight ||
        is_input_backward(op.kind)) {
      if (deferred && is_input_backward(op.kind)) moments.push_back(*deferred);
      deferred.reset();
    }
    // (The others' idle profiles do not change while this chunk's op runs.)
    const ChunkWalk::Found found = walks[static_cast<size_t>(op.chunk)].run(op);
    for (const model::StashProfile& m : found.now) moments.push_back(with_others(op.chunk, m));
    if (found.before_backward) deferred = with_others(op.chunk, *found.before_backward);
  }
  return moments;
}

std::vector<model::StashProfile> program_moments(const std::vector<Program>& programs, int rank,
                                                 Recompute recompute, bool batched_weight_grads,
                                                 int chunk) {
  check(std::ranges::any_of(programs.at(static_cast<size_t>(rank)),
                            [chunk](const Op& op) { return op.chunk == chunk; }),
        "program_moments: rank {} runs no op of chunk {}", rank, chunk);
  std::vector<model::StashProfile> out;
  for (const RankMoment& m : rank_moments(programs, rank, recompute, batched_weight_grads)) {
    if (m.chunk == chunk) out.push_back(m.chunks[static_cast<size_t>(chunk)]);
  }
  return out;
}

}  // namespace mpipe::pipeline
