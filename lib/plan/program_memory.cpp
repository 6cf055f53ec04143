// Memory from the op list: the candidate peak moments of a rank, from one pass over its program.
#include "plan/program_memory.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "core/error.h"
#include "plan/placement.h"
#include "plan/rank_messages.h"

namespace mpipe::plan {
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

// The messages a rank holds at each op of its program (held_messages).
class MessageWalk {
 public:
  MessageWalk(const Program& program, const RankMessages& messages)
      : held_(held_messages(program, messages)) {}

  // The messages of chunk `chunk` held while op `i` runs (before a receive op consumes its own).
  void count(const Program& program, size_t i, int chunk, plan::StashProfile& m) const {
    for (size_t k : held_[i]) {
      const Op& op = program[k];
      if (op.chunk != chunk || k == i) continue;
      switch (op.kind) {
        case OpKind::kRecvActivation:
          ++m.posted_activations;
          break;
        case OpKind::kRecvGrad:
          ++m.posted_gradients;
          break;
        case OpKind::kSendActivation:
          ++m.sent_activations;
          break;
        case OpKind::kSendGrad:
          ++m.sent_gradients;
          break;
        default:
          break;
      }
    }
  }

 private:
  std::vector<std::vector<size_t>> held_;  // per op: the ops whose messages are held then
};

// One chunk's micro-batches, counted op by op over its ops in the rank's program.
class ChunkWalk {
 public:
  ChunkWalk(const Program& rank_program, int chunk, Recompute recompute, bool interleaved)
      : recompute_(recompute), interleaved_(interleaved) {
    Program program;
    std::ranges::copy_if(rank_program, std::back_inserter(program),
                         [chunk](const Op& op) { return op.chunk == chunk; });
    num_micro_batches_ = static_cast<int>(
        std::ranges::count_if(program, [](const Op& op) { return op.kind == OpKind::kForward; }));
    last_ = !has_op(program, OpKind::kSendActivation);
    splitting_ = has_op(program, OpKind::kBackwardInput);
    for (const Op& op : program) {
      if (op.kind != OpKind::kWeightGradsBatched) continue;
      if (op.micro_batch < 0) {
        batched_ = true;
      } else {
        group_ends_.push_back(op.micro_batch);
      }
    }
  }

  // The moments of op `op` of this chunk (running it), and under per-layer recompute the moment
  // after a forward, which counts if the chunk's next compute op is an input-backward.
  struct Found {
    std::vector<plan::StashProfile> now;
    std::optional<plan::StashProfile> before_backward;
  };
  Found run(const Op& op) {
    Found found;
    if (op.kind == OpKind::kWeightGradsBatched) group_open_ = 0;  // a group's product frees them
    if (op.kind == OpKind::kBackwardWeight) {
      // Deferring, a W copies its micro-batch's operands into its group's (the step's, batched),
      // which the group's first W allocates, and frees the micro-batch's W work as it goes: a
      // moment of its own beside what the chunk keeps, the other micro-batches' W work and, on
      // the last stage, the loss gradients waiting (StashProfile::weight_op).
      const bool opens_group = batched_ ? !weight_begun_ : copy_operands(op.micro_batch);
      weight_begun_ = true;
      --pending_weights_;
      if (batched_ || !group_ends_.empty()) {
        plan::StashProfile m = idle();
        m.idle = false;
        m.weight_op = true;
        m.weight_grad_operands_filling = opens_group;
        found.now.push_back(m);
      }
    }
    if (op.kind == OpKind::kForward) {
      forward(op, found);
    } else if (is_input_backward(op.kind)) {
      found.now.push_back(input_backward(op));
    }
    return found;
  }

  // Running a communication op: what the chunk keeps between its ops, beside the message's copy.
  plan::StashProfile copying(const Op& op) const {
    using Copy = plan::StashProfile::Copy;
    plan::StashProfile m = idle();
    m.idle = false;
    m.copy = op.kind == OpKind::kRecvActivation   ? Copy::kActivationIn
             : op.kind == OpKind::kSendActivation ? Copy::kActivationOut
             : op.kind == OpKind::kRecvGrad       ? Copy::kGradientIn
                                                  : Copy::kGradientOut;
    return m;
  }

  // What the chunk holds while another chunk of its rank runs: its micro-batches in flight as
  // the recompute mode keeps them, their W work and loss gradients; no temporaries.
  plan::StashProfile idle() const {
    plan::StashProfile m = common();
    m.idle = true;
    m.backward = false;
    m.loss_grads = last_ ? in_flight_ : 0;
    keep_in_flight(m);
    return m;
  }

 private:
  int last_micro_batch() const { return num_micro_batches_ - 1; }

  // Grouped weight gradients: the op that copies `micro_batch`'s operands (its B, or its W where
  // backwards are split) allocates its group's for all the group's micro-batches if it is the
  // group's first. Returns whether it did.
  bool copy_operands(int micro_batch) {
    if (group_ends_.empty() || group_open_ > 0) return false;
    const auto end = std::ranges::lower_bound(group_ends_, micro_batch);
    check(end != group_ends_.end(), "rank_moments: micro-batch {} in no weight-gradient group",
          micro_batch);
    group_open_ = *end - (end == group_ends_.begin() ? -1 : *std::prev(end));
    return true;
  }

  // The micro-batches in flight as the recompute mode keeps them between their ops.
  void keep_in_flight(plan::StashProfile& m) const {
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
  }

  // What every moment of the chunk shares at the current op.
  plan::StashProfile common() const {
    plan::StashProfile m;
    m.weight_grad_micro_batches =
        batched_ ? (backward_begun_ ? num_micro_batches_ : 0) : group_open_;
    m.pending_weight_micro_batches = pending_weights_;
    m.splitting_backward = splitting_;
    return m;
  }

  // A moment of this chunk running an op.
  plan::StashProfile running(bool backward) const {
    plan::StashProfile m = common();
    m.backward = backward;
    m.loss_grads = last_ ? in_flight_ - 1 : 0;
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
    if (!interleaved_ && forwarded_ == num_micro_batches_) {
      // The last forward of a fill-drain step: its saved tensors are dropped layer by layer
      // unless kept in full.
      plan::StashProfile m = running(false);
      const int full = recompute_ == Recompute::kNever        ? in_flight_
                       : recompute_ == Recompute::kExceptLast ? 1
                                                              : 0;
      m.inputs = recompute_ == Recompute::kPerLayer ? 0 : in_flight_ - full;
      m.full = full;
      m.layer_inputs = recompute_ == Recompute::kPerLayer ? in_flight_ : 0;
      m.discarding = full == 0;
      found.now.push_back(m);
    }
    if (last_) {
      // The last stage computes the micro-batch's loss: every micro-batch in flight kept (this
      // one too), its output beside the loss gradient, the others' loss gradients waiting.
      plan::StashProfile m = running(false);
      keep_in_flight(m);
      m.loss = true;
      found.now.push_back(m);
    }
  }

  plan::StashProfile input_backward(const Op& op) {
    const bool first_backward = !backward_begun_;
    backward_begun_ = true;
    const bool opens_group = op.kind == OpKind::kBackward && copy_operands(op.micro_batch);
    plan::StashProfile m = running(true);
    m.weight_grad_operands_filling = (batched_ && first_backward) || opens_group;
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
  bool interleaved_;  // whether any rank runs a forward after a backward
  int num_micro_batches_ = 0;
  bool last_ = false, splitting_ = false;
  bool batched_ = false;  // whether the chunk batches its weight gradients (a WB op of every one)
  // Grouped weight gradients: the last micro-batch of each group (its WB op's), ascending; the
  // micro-batches of the group whose operands are held (0: none).
  std::vector<int> group_ends_;
  int group_open_ = 0;
  int in_flight_ = 0, forwarded_ = 0, pending_weights_ = 0;
  bool last_in_flight_ = false, backward_begun_ = false;
  bool weight_begun_ = false;  // whether a W op of the step has run
};

}  // namespace

std::vector<std::vector<size_t>> held_messages(const Program& program,
                                               const RankMessages& messages) {
  const std::vector<int>& released = messages.sends_released;
  const std::vector<int>& posted_at = messages.receives_posted;
  std::vector<std::vector<size_t>> held(program.size());
  std::vector<size_t> receives;  // the receive ops' indices
  for (size_t i = 0; i < program.size(); ++i) {
    if (is_receive(program[i].kind)) receives.push_back(i);
  }
  std::vector<size_t> sent;  // the send ops issued so far
  size_t consumed = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    for (size_t r = consumed; std::cmp_less(r, posted_at[i]); ++r) held[i].push_back(receives[r]);
    const auto retired = static_cast<size_t>(i == 0 ? 0 : released[i - 1]);
    for (size_t k = retired; k < sent.size(); ++k) held[i].push_back(sent[k]);
    if (is_receive(op.kind)) ++consumed;
    if (is_send(op.kind)) sent.push_back(i);
  }
  return held;
}

std::vector<RankMoment> rank_moments(const std::vector<Program>& programs, int rank,
                                     const Placement& placement,
                                     const std::vector<RankMessages>& messages_by_rank,
                                     Recompute recompute) {
  check(recompute != Recompute::kAuto, "rank_moments: recompute: auto is not resolved");
  const Program& program = programs.at(static_cast<size_t>(rank));
  const bool interleaved = std::ranges::any_of(programs, interleaves);
  const MessageWalk messages(program, messages_by_rank.at(static_cast<size_t>(rank)));
  const int chunks = placement.virtual_stages;
  std::vector<ChunkWalk> walks;
  for (int c = 0; c < chunks; ++c) {
    walks.emplace_back(program, c, recompute, interleaved);
  }
  // At op `i`: chunk `chunk` running in moment `running`, the others idle, each with its messages.
  const auto with_others = [&](size_t i, int chunk, const plan::StashProfile& running) {
    RankMoment m{.chunk = chunk, .chunks = {}};
    for (int c = 0; c < chunks; ++c) {
      m.chunks.push_back(c == chunk ? running : walks[static_cast<size_t>(c)].idle());
      messages.count(program, i, c, m.chunks.back());
    }
    return m;
  };
  std::vector<RankMoment> moments;
  // Per chunk, per_layer: the moment after its last forward, kept when its next compute op is
  // an input-backward.
  std::vector<std::optional<RankMoment>> before_backward(static_cast<size_t>(chunks));
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    std::optional<RankMoment>& deferred = before_backward[static_cast<size_t>(op.chunk)];
    if (op.kind == OpKind::kForward || op.kind == OpKind::kBackwardWeight ||
        is_input_backward(op.kind)) {
      if (deferred && is_input_backward(op.kind)) moments.push_back(*deferred);
      deferred.reset();
    }
    // (The others' idle profiles do not change while this chunk's op runs.)
    const ChunkWalk::Found found = walks[static_cast<size_t>(op.chunk)].run(op);
    for (const plan::StashProfile& m : found.now) moments.push_back(with_others(i, op.chunk, m));
    if (is_send(op.kind) || is_receive(op.kind)) {
      moments.push_back(with_others(i, op.chunk, walks[static_cast<size_t>(op.chunk)].copying(op)));
    }
    if (found.before_backward) deferred = with_others(i, op.chunk, *found.before_backward);
  }
  return moments;
}

}  // namespace mpipe::plan
