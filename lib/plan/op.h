// Op: one instruction of a stage's per-step program (compute or communication).
#pragma once

#include <string>
#include <vector>

namespace mpipe::plan {

enum class OpKind {
  kRecvActivation,  // receive micro-batch m's input from stage s-1
  kForward,         // F<m>
  kSendActivation,  // send micro-batch m's output to stage s+1
  kRecvGrad,        // receive the gradient of micro-batch m's output from stage s+1
  kBackward,        // B<m>: the whole backward (input and weight gradients)
  kSendGrad,        // send the gradient of micro-batch m's input to stage s-1
  // Zero-bubble schedules split the backward in two (Qi et al. 2024; PyTorch's names):
  kBackwardInput,   // I<m>: the input gradient, keeping what W<m> needs (the paper's B)
  kBackwardWeight,  // W<m>: the weight gradients of an earlier I<m>
  // WB: the chunk's linear layers' weight gradients in one product over a group of micro-batches
  // (Stage::finish_step_grads), once its backwards have copied their operands. weight_grads:
  // batched: micro_batch -1 (every one), the rank's last ops, later chunks first (make_program);
  // the first completes the rank's sends before it starts (Executor::train_step). grouped:
  // micro_batch is the group's last (plan/weight_groups.h), the op placed after its copy.
  kWeightGradsBatched,
};

struct Op {
  OpKind kind;
  int micro_batch;
  // Which of the rank's model chunks the op belongs to (virtual stages: chunk c of rank r is
  // stage r + c·K, pipeline/placement.h); 0 when each rank holds one stage. A communication op
  // carries the chunk of the compute op it serves.
  int chunk = 0;
  friend bool operator==(const Op&, const Op&) = default;
};

using Program = std::vector<Op>;

// Whether any op of the program belongs to a chunk other than 0.
bool has_chunks(const Program& program);

// Whether the op computes an input gradient (B or I): the one that consumes a received gradient
// and produces the gradient sent to the previous stage.
constexpr bool is_input_backward(OpKind kind) {
  return kind == OpKind::kBackward || kind == OpKind::kBackwardInput;
}

// Whether the op receives (RA, RG) or sends (SA, SG) a message.
constexpr bool is_receive(OpKind kind) {
  return kind == OpKind::kRecvActivation || kind == OpKind::kRecvGrad;
}
constexpr bool is_send(OpKind kind) {
  return kind == OpKind::kSendActivation || kind == OpKind::kSendGrad;
}

// The kind of the op at the other end of a message: a receive's send and a send's receive (RA and
// SA, RG and SG).
constexpr OpKind other_end(OpKind kind) {
  switch (kind) {
    case OpKind::kRecvActivation:
      return OpKind::kSendActivation;
    case OpKind::kSendActivation:
      return OpKind::kRecvActivation;
    case OpKind::kRecvGrad:
      return OpKind::kSendGrad;
    case OpKind::kSendGrad:
      return OpKind::kRecvGrad;
    default:
      return kind;  // a compute op has no other end
  }
}

// The index in `program` of its op of this kind, chunk and micro-batch; throws mpipe::Error
// ("no RA2.1 in the program") when it has none.
size_t find_op(const Program& program, OpKind kind, int chunk, int micro_batch);

// "F3", "B0", "RA2", "SA2", "RG1", "SG1", "I0", "W0", "WB", "WB3" (the group ending at micro-batch
// 3); with `with_chunk`, the chunk after a dot: "F3.1" is micro-batch 3's forward in chunk 1,
// "WB.1" chunk 1's batched weight gradients.
std::string to_string(const Op& op, bool with_chunk = false);

}  // namespace mpipe::plan
