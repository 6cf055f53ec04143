// Schedules as data: GPipe fill-drain, 1F1B, ZB-H1, interleaved 1F1B and ZB-V programs for one
// rank of one step.
#include "plan/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "plan/placement.h"
#include "plan/weight_groups.h"

namespace mpipe::plan {

namespace {

// Appends [RA m] F m [SA m] for global stage `stage` of `num_stages` (chunk `chunk` of its rank).
void append_forward(Program& program, int num_stages, int stage, int micro_batch, int chunk = 0) {
  if (stage > 0) program.push_back({OpKind::kRecvActivation, micro_batch, chunk});
  program.push_back({OpKind::kForward, micro_batch, chunk});
  if (stage < num_stages - 1) program.push_back({OpKind::kSendActivation, micro_batch, chunk});
}

// Appends [RG m] B m [SG m] (or I m: `kind`) for global stage `stage` of `num_stages`.
void append_backward(Program& program, int num_stages, int stage, int micro_batch,
                     OpKind kind = OpKind::kBackward, int chunk = 0) {
  if (stage < num_stages - 1) program.push_back({OpKind::kRecvGrad, micro_batch, chunk});
  program.push_back({kind, micro_batch, chunk});
  if (stage > 0) program.push_back({OpKind::kSendGrad, micro_batch, chunk});
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

// Interleaved 1F1B as PyTorch's ScheduleInterleaved1F1B orders it (M a multiple of K): forwards
// go K micro-batches at a time through chunk 0, then the same K through chunk 1, ...; backwards
// through the chunks in reverse. Rank `rank` warms up with (v-1)·K + 2(K-1-rank) forwards.
Program make_interleaved(int num_ranks, int num_micro_batches, int rank, int virtual_stages) {
  const Placement placement{.num_ranks = num_ranks, .virtual_stages = virtual_stages};
  const int total = virtual_stages * num_micro_batches;  // forwards (and backwards) of the rank
  const int warm_up =
      std::min((virtual_stages - 1) * num_ranks + 2 * (num_ranks - 1 - rank), total);
  // The k-th forward's chunk and micro-batch: rounds of K micro-batches, each through every
  // chunk in turn (backward: from the last chunk).
  const auto chunk_of_forward = [&](int k) { return (k / num_ranks) % virtual_stages; };
  const auto chunk_of_backward = [&](int k) {
    return virtual_stages - 1 - (k / num_ranks) % virtual_stages;
  };
  const auto micro_batch_of = [&](int k) {
    return k / (num_ranks * virtual_stages) * num_ranks + k % num_ranks;
  };
  Program program;
  int next_forward = 0;
  int next_backward = 0;
  const auto forward = [&] {
    const int chunk = chunk_of_forward(next_forward);
    append_forward(program, placement.num_stages(), placement.stage_of(rank, chunk),
                   micro_batch_of(next_forward), chunk);
    ++next_forward;
  };
  const auto backward = [&] {
    const int chunk = chunk_of_backward(next_backward);
    append_backward(program, placement.num_stages(), placement.stage_of(rank, chunk),
                    micro_batch_of(next_backward), OpKind::kBackward, chunk);
    ++next_backward;
  };
  while (next_forward < warm_up) forward();
  while (next_forward < total) {
    forward();
    backward();
  }
  while (next_backward < total) backward();
  return program;
}

// ZB-V as PyTorch's ScheduleZBVZeroBubble orders it: the rank's chunk 0 (stage r) and chunk 1
// (stage 2K-1-r, the V of pipeline/placement.h), each backward split into I and W. Built over
// max(M, 2K-1) micro-batches, the count whose phases fill the pipeline, with the ops of
// micro-batches M and above left out (PyTorch leaves their slots empty).
Program make_zbv(int num_ranks, int num_micro_batches, int rank) {
  const Placement placement = placement_for(ScheduleKind::kZbv, num_ranks, 2);
  const int stages = placement.num_stages();
  const int filled = std::max(num_micro_batches, 2 * num_ranks - 1);
  Program program;
  // Per chunk, the next micro-batch of each op kind: forwards, input gradients, weight gradients.
  int forwards[2] = {0, 0}, inputs[2] = {0, 0}, weights[2] = {0, 0};
  const auto forward = [&](int chunk) {
    const int m = forwards[chunk]++;
    if (m < num_micro_batches) {
      append_forward(program, stages, placement.stage_of(rank, chunk), m, chunk);
    }
  };
  const auto input = [&](int chunk) {
    const int m = inputs[chunk]++;
    if (m < num_micro_batches) {
      append_backward(program, stages, placement.stage_of(rank, chunk), m, OpKind::kBackwardInput,
                      chunk);
    }
  };
  const auto weight = [&](int chunk) {
    const int m = weights[chunk]++;
    if (m < num_micro_batches) program.push_back({OpKind::kBackwardWeight, m, chunk});
  };
  // Warm-up: chunk 0 fills the way down, then chunk 1 starts as the V turns at rank K-1.
  for (int i = 0; i < 2 * (num_ranks - rank) - 1; ++i) forward(0);
  for (int i = 0; i < rank; ++i) {
    forward(1);
    forward(0);
  }
  for (int i = 0; i < num_ranks - rank; ++i) {
    forward(1);
    input(1);
    weight(1);
  }
  // Steady state: F I W on chunk 0, then on chunk 1.
  while (forwards[1] < forwards[0] || forwards[0] < filled) {
    if (forwards[0] < filled) forward(0);
    input(0);
    weight(0);
    forward(1);
    input(1);
    weight(1);
  }
  // Cool-down: the last input gradients first, the weight gradients they leave fill the drain.
  for (int i = 0; i < rank; ++i) {
    input(0);
    input(1);
  }
  for (int i = 0; i < num_ranks - rank; ++i) {
    input(0);
    weight(0);
  }
  while (weights[1] < inputs[1]) weight(1);
  while (weights[0] < inputs[0]) weight(0);
  return program;
}

}  // namespace

Placement placement_for(ScheduleKind kind, int num_ranks, int virtual_stages) {
  return {.num_ranks = num_ranks,
          .virtual_stages = virtual_stages,
          .kind = kind == ScheduleKind::kZbv ? PlacementKind::kV : PlacementKind::kLoop};
}

std::optional<ScheduleShapeProblem> schedule_shape_problem(ScheduleKind kind, int num_ranks,
                                                           int num_micro_batches,
                                                           int virtual_stages) {
  using Setting = ScheduleShapeProblem::Setting;
  if (kind == ScheduleKind::kInterleaved) {
    if (virtual_stages < 2) {
      return ScheduleShapeProblem{
          Setting::kVirtualStages,
          fmt::format(
              "interleaved needs 2 or more chunks per rank, got {}; with one chunk per rank "
              "use 1f1b",
              virtual_stages)};
    }
    if (num_micro_batches % num_ranks != 0) {
      return ScheduleShapeProblem{
          Setting::kMicroBatches,
          fmt::format("interleaved needs a multiple of the pipeline ranks ({}), got {}", num_ranks,
                      num_micro_batches)};
    }
    return std::nullopt;
  }
  if (kind == ScheduleKind::kZbv) {
    if (virtual_stages != 2) {
      return ScheduleShapeProblem{
          Setting::kVirtualStages,
          fmt::format("zbv needs 2 chunks per rank (the V: chunk 0 of rank r is stage r, chunk 1 "
                      "stage 2K-1-r), got {}",
                      virtual_stages)};
    }
    return std::nullopt;
  }
  if (virtual_stages != 1 && kind != ScheduleKind::kAuto) {
    return ScheduleShapeProblem{
        Setting::kVirtualStages,
        fmt::format("{} chunks per rank need the interleaved or zbv schedule, got {}",
                    virtual_stages, to_string(kind))};
  }
  return std::nullopt;
}

namespace {

// The schedule's ops, without the batched weight gradients.
Program make_schedule(ScheduleKind kind, int num_ranks, int num_micro_batches, int rank,
                      int virtual_stages) {
  check(num_ranks >= 1, "make_program: number of ranks must be >= 1, got {}", num_ranks);
  check(num_micro_batches >= 1, "make_program: number of micro-batches must be >= 1, got {}",
        num_micro_batches);
  check(rank >= 0 && rank < num_ranks, "make_program: rank must be in [0, {}), got {}", num_ranks,
        rank);
  check(virtual_stages >= 1, "make_program: chunks per rank must be >= 1, got {}", virtual_stages);
  if (auto problem = schedule_shape_problem(kind, num_ranks, num_micro_batches, virtual_stages)) {
    throw Error(fmt::format("make_program: {}", problem->message));
  }
  switch (kind) {
    case ScheduleKind::kGpipe:
      return make_gpipe(num_ranks, num_micro_batches, rank);
    case ScheduleKind::kOneFOneB:
      return make_one_f_one_b(num_ranks, num_micro_batches, rank);
    case ScheduleKind::kZbH1:
      return make_zb_h1(num_ranks, num_micro_batches, rank);
    case ScheduleKind::kInterleaved:
      return make_interleaved(num_ranks, num_micro_batches, rank, virtual_stages);
    case ScheduleKind::kZbv:
      return make_zbv(num_ranks, num_micro_batches, rank);
    case ScheduleKind::kAuto:
      throw Error("make_program: schedule: auto is not resolved");
  }
  throw Error("make_program: unknown schedule kind");
}

// `program` with a group op (micro_batch: the group's last) per group of each chunk, after the op
// that copies the operands of the group's last micro-batch (its W where backwards are split, else
// its B) and after every send before the chunk's next copy: the product, g times a micro-batch's,
// then delays no message another rank waits for, and where no send follows the copy it runs at
// once, filling the wait for the next receive (ZB-V's cool-down on 2 ranks at M = 2: rank 1's
// stage-2 product had held back the stage-1 gradient rank 0 was waiting for).
Program with_group_ops(const Program& program, const WeightGroups& groups, bool split) {
  const OpKind copying = split ? OpKind::kBackwardWeight : OpKind::kBackward;
  std::vector<std::vector<Op>> after(program.size());  // the group ops to run after each op
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    if (op.kind != copying || op.micro_batch != groups.last(groups.group_of(op.micro_batch))) {
      continue;
    }
    size_t at = i;
    for (size_t j = i + 1; j < program.size(); ++j) {
      if (program[j].kind == copying && program[j].chunk == op.chunk) break;
      if (is_send(program[j].kind)) at = j;
    }
    after[at].push_back(
        {.kind = OpKind::kWeightGradsBatched, .micro_batch = op.micro_batch, .chunk = op.chunk});
  }
  Program out;
  for (size_t i = 0; i < program.size(); ++i) {
    out.push_back(program[i]);
    out.insert(out.end(), after[i].begin(), after[i].end());
  }
  return out;
}

}  // namespace

Program make_program(ScheduleKind kind, int num_ranks, int num_micro_batches, int rank,
                     int virtual_stages, WeightGrads weight_grads, int weight_group) {
  check(weight_grads != WeightGrads::kAuto, "make_program: weight_grads: auto is not resolved");
  Program program = make_schedule(kind, num_ranks, num_micro_batches, rank, virtual_stages);
  const WeightGroups groups = weight_groups(weight_grads, num_micro_batches, weight_group);
  if (!groups.deferred()) return program;
  if (weight_grads == WeightGrads::kGrouped) {
    return with_group_ops(program, groups, splits_backward(kind));
  }
  for (int chunk = virtual_stages; chunk-- > 0;) {
    program.push_back({.kind = OpKind::kWeightGradsBatched, .micro_batch = -1, .chunk = chunk});
  }
  return program;
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (auto kind = value_named(kScheduleNames, name)) return *kind;
  throw InputError(fmt::format("unknown schedule \"{}\" (expected {})", name,
                               list_names(kScheduleNames, " or ")));
}

bool splits_backward(ScheduleKind kind) {
  return kind == ScheduleKind::kZbH1 || kind == ScheduleKind::kZbv;
}

std::string to_string(ScheduleKind kind) { return std::string(name_of(kScheduleNames, kind)); }

}  // namespace mpipe::plan
