// The op loop: early-posted receives, nonblocking sends, forward/backward on the op's chunk, and
// the loss.
#include "pipeline/executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <span>
#include <utility>

#include "core/error.h"
#include "core/test_stop.h"
#include "pipeline/op_trace_kind.h"

namespace mpipe::pipeline {
namespace {

Bundle take(std::map<std::pair<int, int>, Bundle>& bundles, const plan::Op& op, const char* what) {
  auto it = bundles.find({op.chunk, op.micro_batch});
  check(it != bundles.end(),
        "{} of micro-batch {} of chunk {} is missing: the program is out of order", what,
        op.micro_batch, op.chunk);
  Bundle bundle = std::move(it->second);
  bundles.erase(it);
  return bundle;
}

// The model's output: the last stage's output bundle holds it alone.
const Tensor& model_output(const Bundle& output) {
  check(output.size() == 1, "the last stage's output has {} tensors, expected 1", output.size());
  return output.front();
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

double& Executor::time_slot(plan::OpKind kind) {
  switch (kind) {
    case plan::OpKind::kRecvActivation:
    case plan::OpKind::kRecvGrad:
      return times_.wait_s;
    case plan::OpKind::kSendActivation:
    case plan::OpKind::kSendGrad:
      return times_.send_s;
    case plan::OpKind::kForward:
    case plan::OpKind::kBackward:
    case plan::OpKind::kBackwardInput:
    case plan::OpKind::kBackwardWeight:
    case plan::OpKind::kWeightGradsBatched:
      break;
  }
  return times_.compute_s;
}

Executor::Executor(std::vector<Stage*> stages, Link& link, int rank, plan::Placement placement,
                   const nn::Loss& loss, kernels::KernelContext& kernels)
    : stages_(std::move(stages)),
      link_(link),
      rank_(rank),
      placement_(placement),
      loss_(loss),
      kernels_(kernels) {
  check(num_chunks() == placement_.virtual_stages, "Executor: {} stages for {} chunks per rank",
        num_chunks(), placement_.virtual_stages);
  std::vector<nn::ParamBuffer*> buffers;
  for (Stage* stage : stages_) buffers.push_back(&stage->params());
  buckets_ = rank_gradient_buckets(buffers);
  for (Stage* stage : stages_) {
    stage->set_layer_hook(
        [this](int global_layer, bool backward) { between_layers(global_layer, backward); });
  }
}

Executor::~Executor() {
  for (Stage* stage : stages_) stage->set_layer_hook({});
}

void Executor::between_layers(int global_layer, bool backward) {
  if (trace_ != nullptr && trace_->recording()) trace_->layer_ended(!backward, Clock::now());
  link_.progress();
  if (reduction_ == nullptr) return;
  if (backward && in_last_backward_) {
    auto it = buckets_.first_of_layer.find(global_layer);
    if (it != buckets_.first_of_layer.end()) reduction_->start_from(it->second);
  }
  reduction_->progress();
}

nn::LayerContext Executor::layer_context(const RoundPlan& plan, int micro_batch,
                                         bool training) const {
  return nn::LayerContext{.kernels = kernels_,
                          .seed = plan.seed,
                          .step = plan.round,
                          .first_example = plan.first_example.at(static_cast<size_t>(micro_batch)),
                          .training = training,
                          .recompute = false,
                          .need_input_grad = true};
}

void Executor::post_recv(const plan::Op& op, const RoundPlan& plan) {
  const int64_t rows = plan.rows.at(static_cast<size_t>(op.micro_batch));
  const auto chunk = static_cast<size_t>(op.chunk);
  if (op.kind == plan::OpKind::kRecvActivation) {
    link_.post_recv(Direction::kActivation, plan.round, op.micro_batch, op.chunk,
                    message_shape(plan.stage_inputs.at(chunk), rows));
  } else {
    link_.post_recv(Direction::kGradient, plan.round, op.micro_batch, op.chunk,
                    message_shape(plan.stage_output_grads.at(chunk), rows));
  }
}

LossTotals Executor::train_step(const plan::Program& program, const plan::RankMessages& messages,
                                const RoundPlan& plan, const MicroBatchData& data,
                                comm::BucketedAllreduce* reduction) {
  const std::vector<int>& posted_at = messages.receives_posted;
  const std::vector<int>& sends_released = messages.sends_released;
  check(sends_released.size() == program.size() && posted_at.size() == program.size(),
        "rank {}: {} send releases and {} receive posts for {} ops", rank_, sends_released.size(),
        posted_at.size(), program.size());
  std::vector<size_t> receives;
  // Per chunk, the op after which every gradient of the chunk's step is complete: its last
  // backward, its last W where backwards are split, or its WB where they are batched.
  std::vector<size_t> last_backward(stages_.size(), 0);
  std::vector<bool> batched(stages_.size(), false);
  for (size_t i = 0; i < program.size(); ++i) {
    const plan::OpKind kind = program[i].kind;
    const auto chunk = static_cast<size_t>(program[i].chunk);
    if (plan::is_receive(kind)) receives.push_back(i);
    if (kind == plan::OpKind::kBackward || kind == plan::OpKind::kBackwardWeight ||
        kind == plan::OpKind::kWeightGradsBatched) {
      last_backward[chunk] = i;
    }
    if (kind == plan::OpKind::kWeightGradsBatched) batched[chunk] = true;
  }
  for (size_t chunk = 0; chunk < stages_.size(); ++chunk) {
    check(batched[chunk] == stages_[chunk]->defers_grads(),
          "rank {}: chunk {}'s stage {} its weight gradients but its program has {} WB op", rank_,
          chunk, stages_[chunk]->defers_grads() ? "batches" : "does not batch",
          batched[chunk] ? "a" : "no");
  }
  // The buckets start from the last (RankBuckets): a later chunk's gradients must be complete
  // first (as every schedule's are).
  check(reduction == nullptr || std::ranges::is_sorted(last_backward, std::greater<>()),
        "rank {}: the program completes an earlier chunk's gradients before a later one's", rank_);
  LossTotals totals;
  times_ = {};
  reduction_ = reduction;
  struct Reset {  // the hook must not see a reduction after the step, even when one throws
    Executor& executor;
    ~Reset() {
      executor.reduction_ = nullptr;
      executor.in_last_backward_ = false;
    }
  } reset{*this};
  size_t posted = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    for (; std::cmp_less(posted, posted_at[i]); ++posted) {
      post_recv(program[receives[posted]], plan);
    }
    if (program[i].kind == plan::OpKind::kWeightGradsBatched && program[i].micro_batch < 0) {
      // The sends complete before the batched weight gradients: the previous stage is waiting
      // for the last gradient, and a message above the eager limit moves only while its sender
      // calls into MPI (over TCP, and on shared memory without single-copy), so one left pending
      // would wait out this stage's GEMMs, and the stage before it its own, down the chain.
      const auto send_start = Clock::now();
      link_.wait_sends();
      times_.send_s += seconds_since(send_start);
    }
    const auto start = Clock::now();
    const bool tracing = trace_ != nullptr && trace_->recording();
    if (tracing && (program[i].kind == plan::OpKind::kBackward ||
                    program[i].kind == plan::OpKind::kBackwardInput)) {
      trace_->backward_began(program[i].micro_batch, start, program[i].chunk);
    }
    // (With batched weight gradients, a layer's bucket waits for its GEMM in the chunk's WB.)
    in_last_backward_ = i == last_backward[static_cast<size_t>(program[i].chunk)];
    const int64_t bytes = run_op(program[i], plan, data, totals);
    in_last_backward_ = false;
    const auto end = Clock::now();
    if (tracing) trace_op(program[i], start, end, bytes);
    const double seconds = std::chrono::duration<double>(end - start).count();
    time_slot(program[i].kind) += seconds;
    // (Each send released here is complete or known delivered: its wait is short.)
    const auto release_start = Clock::now();
    link_.release_sends(sends_released[i]);
    times_.send_s += seconds_since(release_start);
    if (spdlog::should_log(spdlog::level::trace)) {
      spdlog::trace("step {} stage {}: {} {:.3f} ms", plan.round + 1,
                    global_stage(program[i].chunk), plan::to_string(program[i]), 1e3 * seconds);
    }
  }
  // (The sends of a program without WB ops complete here.)
  const auto send_start = Clock::now();
  link_.wait_sends();
  times_.send_s += seconds_since(send_start);
  if (reduction) reduction->start_from(0);
  check(inputs_.empty() && outputs_.empty() && grad_outputs_.empty() && grad_inputs_.empty(),
        "rank {}: the program left tensors unconsumed", rank_);
  return totals;
}

void Executor::trace_op(const plan::Op& op, Clock::time_point start, Clock::time_point end,
                        int64_t bytes) {
  // A backward (B, or I) ends the backward the recorder began, closing its recomputes.
  if (plan::is_input_backward(op.kind)) return trace_->backward_ended(end);
  trace_->span(op_trace_kind(op), op.micro_batch, start, end, op.chunk, bytes);
}

int64_t Executor::run_op(const plan::Op& op, const RoundPlan& plan, const MicroBatchData& data,
                         LossTotals& totals) {
  const int m = op.micro_batch;
  const Slot slot{op.chunk, m};
  const auto chunk = static_cast<size_t>(op.chunk);
  // (A batched WB op's micro-batch is -1; every other op's is one of the round's.)
  const auto rows = [&plan, m] { return plan.rows.at(static_cast<size_t>(m)); };
  Stage& stage = *stages_.at(chunk);
  switch (op.kind) {
    case plan::OpKind::kRecvActivation: {
      Tensor message = link_.wait_recv(Direction::kActivation, m, op.chunk);
      const int64_t bytes = message.numel() * static_cast<int64_t>(sizeof(float));
      inputs_[slot] = unpack(std::move(message), plan.stage_inputs.at(chunk), rows());
      return bytes;
    }
    case plan::OpKind::kForward: {
      test_stop_at(TestMoment::kForward, plan.round + 1);
      Bundle input = is_first(op.chunk) ? data.inputs(m) : take(inputs_, op, "input");
      Bundle output = stage.forward(m, std::move(input), layer_context(plan, m, true));
      if (is_last(op.chunk)) {
        nn::LossOutput loss = loss_.compute(kernels_, model_output(output), data.targets(m),
                                            plan.grad_scale, /*want_grad=*/true);
        totals.add(loss);
        grad_outputs_[slot] = bundle_of(std::move(loss.grad));
      } else {
        outputs_[slot] = std::move(output);
      }
      break;
    }
    case plan::OpKind::kSendActivation:
      return send(Direction::kActivation, plan.round, op, pack(take(outputs_, op, "output")));
    case plan::OpKind::kRecvGrad: {
      Tensor message = link_.wait_recv(Direction::kGradient, m, op.chunk);
      const int64_t bytes = message.numel() * static_cast<int64_t>(sizeof(float));
      grad_outputs_[slot] = unpack(std::move(message), plan.stage_output_grads.at(chunk), rows());
      return bytes;
    }
    case plan::OpKind::kBackward:
    case plan::OpKind::kBackwardInput: {
      test_stop_at(TestMoment::kBackward, plan.round + 1);
      Bundle grad_output = take(grad_outputs_, op, "output gradient");
      const nn::LayerContext ctx = layer_context(plan, m, true);
      Bundle grad_input = op.kind == plan::OpKind::kBackward
                              ? stage.backward(m, std::move(grad_output), ctx)
                              : stage.backward_input(m, std::move(grad_output), ctx);
      if (!is_first(op.chunk)) grad_inputs_[slot] = std::move(grad_input);
      break;
    }
    case plan::OpKind::kBackwardWeight:
      stage.backward_weight(m, layer_context(plan, m, true));
      break;
    case plan::OpKind::kWeightGradsBatched: {  // micro-batch -1: every one (batched)
      const int last = m < 0 ? static_cast<int>(plan.rows.size()) - 1 : m;
      stage.finish_step_grads(layer_context(plan, last, /*training=*/true), last);
      break;
    }
    case plan::OpKind::kSendGrad:
      return send(Direction::kGradient, plan.round, op,
                  pack(take(grad_inputs_, op, "input gradient")));
  }
  return 0;
}

int64_t Executor::send(Direction direction, int64_t round, const plan::Op& op, Tensor message) {
  const int64_t bytes = message.numel() * static_cast<int64_t>(sizeof(float));
  link_.send(direction, round, op.micro_batch, op.chunk, std::move(message));
  return bytes;
}

LossTotals Executor::evaluate(const RoundPlan& plan, const MicroBatchData& data,
                              std::vector<nn::LossOutput>* examples, std::vector<float>* outputs) {
  const int num_micro_batches = static_cast<int>(plan.rows.size());
  for (int chunk = 0; chunk < num_chunks(); ++chunk) {
    if (is_first(chunk)) continue;
    for (int m = 0; m < num_micro_batches; ++m) {
      link_.post_recv(Direction::kEvalActivation, plan.round, m, chunk,
                      message_shape(plan.stage_inputs.at(static_cast<size_t>(chunk)),
                                    plan.rows[static_cast<size_t>(m)]));
    }
  }
  LossTotals totals;
  // Chunk by chunk: a micro-batch's input to chunk c comes from an earlier chunk or rank, which
  // never waits for this rank's later work.
  for (int chunk = 0; chunk < num_chunks(); ++chunk) {
    Stage& stage = *stages_[static_cast<size_t>(chunk)];
    for (int m = 0; m < num_micro_batches; ++m) {
      Bundle input = is_first(chunk) ? data.inputs(m)
                                     : unpack(link_.wait_recv(Direction::kEvalActivation, m, chunk),
                                              plan.stage_inputs.at(static_cast<size_t>(chunk)),
                                              plan.rows[static_cast<size_t>(m)]);
      Bundle output = stage.evaluate(input, layer_context(plan, m, false));
      if (is_last(chunk)) {
        const Tensor targets = data.targets(m);
        const Tensor& predicted = model_output(output);
        totals.add(loss_.compute(kernels_, predicted, targets, 1.0f, false));
        if (outputs) {
          const std::span<const float> values = predicted.span();
          outputs->insert(outputs->end(), values.begin(), values.end());
        }
        for (int64_t row = 0; examples && row < predicted.shape()[0]; ++row) {
          examples->push_back(loss_.compute(kernels_, predicted.slice_rows(row, 1),
                                            targets.slice_rows(row, 1), 1.0f, false));
        }
      } else {
        link_.send(Direction::kEvalActivation, plan.round, m, chunk, pack(std::move(output)));
      }
    }
  }
  link_.wait_sends();
  return totals;
}

}  // namespace mpipe::pipeline
