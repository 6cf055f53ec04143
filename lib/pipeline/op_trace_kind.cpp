// op_trace_kind: which trace event each program op is recorded as.
#include "pipeline/op_trace_kind.h"

#include "core/error.h"

namespace mpipe::pipeline {

log::TraceKind op_trace_kind(const plan::Op& op) {
  switch (op.kind) {
    case plan::OpKind::kRecvActivation:
      return log::TraceKind::kRecvActivation;
    case plan::OpKind::kForward:
      return log::TraceKind::kForward;
    case plan::OpKind::kSendActivation:
      return log::TraceKind::kSendActivation;
    case plan::OpKind::kRecvGrad:
      return log::TraceKind::kRecvGradient;
    case plan::OpKind::kBackward:
    case plan::OpKind::kBackwardInput:
      return log::TraceKind::kBackward;
    case plan::OpKind::kBackwardWeight:
      return log::TraceKind::kWeightGrad;
    case plan::OpKind::kWeightGradsBatched:
      return op.micro_batch < 0 ? log::TraceKind::kWeightGrad : log::TraceKind::kWeightGroup;
    case plan::OpKind::kSendGrad:
      return log::TraceKind::kSendGradient;
  }
  throw Error("op_trace_kind: unknown op kind");
}

}  // namespace mpipe::pipeline
