// Op: the short textual names of pipeline ops ("F3", "RA2", ...).
#include "plan/op.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::plan {

namespace {

const char* prefix(OpKind kind) {
  switch (kind) {
    case OpKind::kRecvActivation:
      return "RA";
    case OpKind::kForward:
      return "F";
    case OpKind::kSendActivation:
      return "SA";
    case OpKind::kRecvGrad:
      return "RG";
    case OpKind::kBackward:
      return "B";
    case OpKind::kSendGrad:
      return "SG";
    case OpKind::kBackwardInput:
      return "I";
    case OpKind::kBackwardWeight:
      return "W";
    case OpKind::kWeightGradsBatched:
      return "WB";
  }
  return "?";
}

}  // namespace

bool has_chunks(const Program& program) {
  return std::ranges::any_of(program, [](const Op& op) { return op.chunk != 0; });
}

std::string to_string(const Op& op, bool with_chunk) {
  if (op.kind == OpKind::kWeightGradsBatched && op.micro_batch < 0) {  // every micro-batch's
    return with_chunk ? fmt::format("{}.{}", prefix(op.kind), op.chunk) : prefix(op.kind);
  }
  if (with_chunk) return fmt::format("{}{}.{}", prefix(op.kind), op.micro_batch, op.chunk);
  return fmt::format("{}{}", prefix(op.kind), op.micro_batch);
}

size_t find_op(const Program& program, OpKind kind, int chunk, int micro_batch) {
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    if (op.kind == kind && op.chunk == chunk && op.micro_batch == micro_batch) return i;
  }
  throw Error(
      fmt::format("no {} in the program",
                  to_string(Op{.kind = kind, .micro_batch = micro_batch, .chunk = chunk}, true)));
}

}  // namespace mpipe::plan
