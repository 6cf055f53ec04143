// Schedules as data: GPipe fill-drain, 1F1B and ZB-H1 programs for one stage of one step.
#include "pipeline/schedule.h"

#include <algorithm>

#include "core/error.h"

namespace mpipe::pipeline {

namespace {

// Appends [RA m] F m [SA m] for stage `stage` of `num_stages`.
void append_forward(Program& program, int num_stages, int stage, int micro_batch) {
  if (stage > 0) program.push_back({OpKind::kRecvActivation, micro_batch});
  program.push_back({OpKind::kForward, micro_batch});
  if (stage < num_stages - 1) program.push_back({OpKind::kSendActivation, micro_batch});
}

// Appends [RG m] B m [SG m] (or I m: `kind`) for stage `stage` of `num_stages`.
void append_backward(Program& program, int num_stages, int stage, int micro_batch,
                     OpKind kind = OpKind::kBackward) {
  if (stage < num_stages - 1) program.push_back({OpKind::kRecvGrad, micro_batch});
  program.push_back({kind, micro_batch});
  if (stage > 0) program.push_back({OpKind::kSendGrad, micro_batch});
}

Program make_gpipe(int num_stages, int num_micro_batches, int stage) {
  Program program;
  for (int m = 0; m < num_micro_batches; ++m) append_forward(program, num_stages, stage, m);
  for (int m = 0; m < num_micro_batches; ++m) append_backward(program, num_stages, stage, m);
  return program;
}

// PipeDream-flush / Megatron 1F1B: the backwards still run in ascending micro-batch order.
Program make_one_f_one_b(int num_stages, int num_micro_batches, int stage) {
  Program program;
  const int warm_up = std::min(num_stages - stage - 1, num_micro_batches);
  int next_forward = 0;
  int next_backward = 0;
  while (next_forward < warm_up) append_forward(program, num_stages, stage, next_forward++);
  while (next_forward < num_micro_batches) {
    append_forward(program, num_stages, stage, next_forward++);
    append_backward(program, num_stages, stage, next_backward++);
  }
  while (next_backward < num_micro_batches) {
    append_backward(program, num_stages, stage, next_backward++);
  }
  return program;
}

// ZB-H1 as PyTorch's ScheduleInterleavedZeroBubble builds it with one chunk per rank: 1F1B's
// order with I for B, and W ops delayed by `stage` slots.
Program make_zb_h1(int num_stages, int num_micro_batches, int stage) {
  Program program;
  const int warm_up = std::min(num_stages - stage - 1, num_micro_batches);
  int next_forward = 0;
  int next_input = 0;
  int next_weight = 0;
  // After each I: the oldest pending W, once `stage` I ops have run without one.
  const auto input_then_weight = [&] {
    append_backward(program, num_stages, stage, next_input++, OpKind::kBackwardInput);
    if (next_input > stage) program.push_back({OpKind::kBackwardWeight, next_weight++});
  };
  while (next_forward < warm_up) append_forward(program, num_stages, stage, next_forward++);
  while (next_forward < num_micro_batches) {
    append_forward(program, num_stages, stage, next_forward++);
    input_then_weight();
  }
  while (next_input < num_micro_batches) input_then_weight();
  while (next_weight < num_micro_batches) {
    program.push_back({OpKind::kBackwardWeight, next_weight++});
  }
  return program;
}

}  // namespace

Program make_program(ScheduleKind kind, int num_stages, int num_micro_batches, int stage) {
  check(num_stages >= 1, "make_program: number of stages must be >= 1, got {}", num_stages);
  check(num_micro_batches >= 1, "make_program: number of micro-batches must be >= 1, got {}",
        num_micro_batches);
  check(stage >= 0 && stage < num_stages, "make_program: stage must be in [0, {}), got {}",
        num_stages, stage);
  switch (kind) {
    case ScheduleKind::kGpipe:
      return make_gpipe(num_stages, num_micro_batches, stage);
    case ScheduleKind::kOneFOneB:
      return make_one_f_one_b(num_stages, num_micro_batches, stage);
    case ScheduleKind::kZbH1:
      return make_zb_h1(num_stages, num_micro_batches, stage);
    case ScheduleKind::kAuto:
      throw Error("make_program: schedule: auto is not resolved");
  }
  throw Error("make_program: unknown schedule kind");
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (auto kind = value_named(kScheduleNames, name)) return *kind;
  throw InputError(fmt::format("unknown schedule \"{}\" (expected {})", name,
                               list_names(kScheduleNames, " or ")));
}

bool splits_backward(ScheduleKind kind) { return kind == ScheduleKind::kZbH1; }

std::string to_string(ScheduleKind kind) { return std::string(name_of(kScheduleNames, kind)); }

}  // namespace mpipe::pipeline
