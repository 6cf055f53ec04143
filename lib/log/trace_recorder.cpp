// TraceRecorder: events of the traced steps, with the recomputes inside a backward found from
// the layer boundaries.
#include "log/trace_recorder.h"

#include <fmt/format.h>

namespace mpipe::log {

bool is_compute(TraceKind kind) {
  switch (kind) {
    case TraceKind::kForward:
    case TraceKind::kBackward:
    case TraceKind::kRecompute:
    case TraceKind::kWeightGrad:
    case TraceKind::kWeightGroup:
    case TraceKind::kOptimizer:
    case TraceKind::kEvaluation:
    case TraceKind::kCheckpoint:
      return true;
    case TraceKind::kSendActivation:
    case TraceKind::kSendGradient:
    case TraceKind::kSendActivationDone:
    case TraceKind::kSendGradientDone:
    case TraceKind::kRecvActivation:
    case TraceKind::kRecvGradient:
    case TraceKind::kAllreduce:
    case TraceKind::kLossAllreduce:
      break;
  }
  return false;
}

bool is_instant(TraceKind kind) {
  return kind == TraceKind::kSendActivationDone || kind == TraceKind::kSendGradientDone;
}

std::string trace_name(TraceKind kind, int micro_batch, int chunk) {
  const char* name = "";
  switch (kind) {
    case TraceKind::kForward:
      name = "F";
      break;
    case TraceKind::kBackward:
      name = "B";
      break;
    case TraceKind::kRecompute:
      name = "R";
      break;
    case TraceKind::kWeightGrad:
      name = "W";
      break;
    case TraceKind::kWeightGroup:
      name = "WB";
      break;
    case TraceKind::kOptimizer:
      name = "optimizer";
      break;
    case TraceKind::kEvaluation:
      name = "evaluation";
      break;
    case TraceKind::kCheckpoint:
      name = "checkpoint";
      break;
    case TraceKind::kSendActivation:
      name = "SA";
      break;
    case TraceKind::kSendGradient:
      name = "SG";
      break;
    case TraceKind::kSendActivationDone:
      name = "SA";
      break;
    case TraceKind::kSendGradientDone:
      name = "SG";
      break;
    case TraceKind::kRecvActivation:
      name = "RA";
      break;
    case TraceKind::kRecvGradient:
      name = "RG";
      break;
    case TraceKind::kAllreduce:
      name = "allreduce";
      break;
    case TraceKind::kLossAllreduce:
      name = "loss allreduce";
      break;
  }
  std::string out = micro_batch < 0 ? std::string(name) : fmt::format("{}{}", name, micro_batch);
  if (chunk >= 0) out += fmt::format(".{}", chunk);
  return is_instant(kind) ? out + " done" : out;
}

void TraceRecorder::span(TraceKind kind, int micro_batch, Clock::time_point start,
                         Clock::time_point end, int chunk, int64_t bytes) {
  events_.push_back({.kind = kind,
                     .micro_batch = micro_batch,
                     .step = step_,
                     .start_s = seconds(start),
                     .end_s = seconds(end),
                     .chunk = chunk,
                     .bytes = bytes});
}

void TraceRecorder::instant(TraceKind kind, int micro_batch, Clock::time_point at, int chunk,
                            int64_t bytes) {
  span(kind, micro_batch, at, at, chunk, bytes);
}

void TraceRecorder::backward_began(int micro_batch, Clock::time_point start, int chunk) {
  backward_micro_batch_ = micro_batch;
  backward_chunk_ = chunk;
  backward_start_ = start;
  last_layer_end_s_ = seconds(start);
  open_recompute_ = kNoEvent;
}

void TraceRecorder::layer_ended(bool recompute_forward, Clock::time_point now) {
  if (backward_micro_batch_ < 0) return;
  const double now_s = seconds(now);
  if (!recompute_forward) {
    open_recompute_ = kNoEvent;
  } else if (open_recompute_ != kNoEvent) {
    events_[open_recompute_].end_s = now_s;
  } else {
    open_recompute_ = events_.size();
    events_.push_back({.kind = TraceKind::kRecompute,
                       .micro_batch = backward_micro_batch_,
                       .step = step_,
                       .start_s = last_layer_end_s_,
                       .end_s = now_s,
                       .chunk = backward_chunk_});
  }
  last_layer_end_s_ = now_s;
}

void TraceRecorder::backward_ended(Clock::time_point end) {
  span(TraceKind::kBackward, backward_micro_batch_, backward_start_, end, backward_chunk_);
  backward_micro_batch_ = -1;
  backward_chunk_ = -1;
  open_recompute_ = kNoEvent;
}

TraceScope::TraceScope(TraceRecorder& recorder, TraceKind kind)
    : recorder_(recorder), kind_(kind), active_(recorder.recording()) {
  if (active_) start_ = TraceRecorder::Clock::now();
}

TraceScope::~TraceScope() {
  if (active_) recorder_.span(kind_, -1, start_, TraceRecorder::Clock::now());
}

}  // namespace mpipe::log
