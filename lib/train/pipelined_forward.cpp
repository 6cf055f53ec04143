// Decoding's forward passes, stage by stage through the first replica's ranks, driven by world
// rank 0.
#include "train/pipelined_forward.h"

#include <algorithm>
#include <array>
#include <utility>

#include "comm/agree.h"
#include "core/error.h"
#include "pipeline/bundle.h"
#include "pipeline/link.h"
#include "train/translator.h"

namespace mpipe::train {
namespace {

// The kind of a decoding message's tag in the run's TagSpace (decoding runs between steps and
// evaluations, when no other pipeline message is in flight).
constexpr int kDecoding = static_cast<int>(pipeline::Direction::kEvalActivation);

}  // namespace

PipelinedForward::PipelinedForward(Trainer& trainer) : trainer_(trainer) {}

bool PipelinedForward::takes_part() const { return trainer_.topology().replica == 0; }

Tensor PipelinedForward::logits_at(std::vector<Tensor> data, int64_t position) {
  check(trainer_.world().rank() == 0 && !finished_,
        "PipelinedForward::logits_at: on world rank 0 before finish()");
  const int64_t rows = data.at(0).shape()[0];
  std::array<double, 2> header{static_cast<double>(rows), static_cast<double>(position)};
  trainer_.groups().pipeline.broadcast(std::span<double>(header), 0);
  return run(std::move(data), rows, position);
}

void PipelinedForward::finish() {
  if (finished_ || trainer_.world().rank() != 0) return;
  finished_ = true;
  std::array<double, 2> header{0, 0};
  trainer_.groups().pipeline.broadcast(std::span<double>(header), 0);
}

void PipelinedForward::serve() {
  for (;;) {
    std::array<double, 2> header{};
    trainer_.groups().pipeline.broadcast(std::span<double>(header), 0);
    const auto rows = static_cast<int64_t>(header[0]);
    if (rows == 0) return;
    run({}, rows, static_cast<int64_t>(header[1]));
  }
}

Tensor PipelinedForward::run(std::vector<Tensor> data, int64_t rows, int64_t position) {
  const comm::Communicator& pipeline = trainer_.groups().pipeline;
  const plan::Placement& placement = trainer_.placement();
  const model::ModelPlan& plan = trainer_.plan();
  const int64_t round = forwards_++;
  const auto tag = [&](int chunk) {
    return trainer_.tags().message(
        {.round = round, .chunk = chunk, .micro_batch = 0, .kind = kDecoding});
  };
  std::vector<int> chunks(static_cast<size_t>(trainer_.num_chunks()));
  for (int c = 0; c < trainer_.num_chunks(); ++c) chunks[static_cast<size_t>(c)] = c;
  std::ranges::sort(chunks, {}, [&](int c) { return trainer_.global_stage(c); });

  const int last = placement.num_stages() - 1;
  const nn::LayerContext evaluation{.kernels = trainer_.kernels(), .training = false};
  pipeline::Bundle carried;  // the previous stage's output, when that stage is this rank's too
  Tensor logits;
  for (const int chunk : chunks) {
    const int stage = trainer_.global_stage(chunk);
    pipeline::Stage& mine = trainer_.stage(chunk);
    // The stage's input bundle is the live set of the cut before its first layer.
    const std::vector<Shape> input_shapes = plan.live_shapes(trainer_.layer_range(chunk).begin);
    pipeline::Bundle input;
    if (stage == 0) {
      for (const int value : mine.input_values()) {
        input.push_back(std::move(data.at(static_cast<size_t>(value))));
      }
    } else if (placement.rank_of(stage - 1) == pipeline.rank()) {
      input = std::move(carried);
    } else {
      const int from = placement.rank_of(stage - 1);
      Tensor message(pipeline::message_shape(input_shapes, rows));
      pipeline.irecv(message.span(), from, tag(chunk)).wait();
      input = pipeline::unpack(std::move(message), input_shapes, rows);
    }
    pipeline::Bundle output = mine.evaluate(input, evaluation);
    if (stage == last) {
      Tensor at = logits_at_position(output.at(0), position);
      if (pipeline.rank() == 0) {
        logits = std::move(at);
      } else {
        pipeline.isend(at.span(), 0, tag(0)).wait();  // stage 0 receives nothing: chunk 0 free
      }
    } else if (placement.rank_of(stage + 1) == pipeline.rank()) {
      carried = std::move(output);
    } else {
      const int to = placement.rank_of(stage + 1);
      const int next_chunk = placement.chunk_of(stage + 1);
      const Tensor message = pipeline::pack(std::move(output));
      pipeline.isend(message.span(), to, tag(next_chunk)).wait();
    }
  }
  if (pipeline.rank() == 0 && placement.rank_of(last) != 0) {
    logits = Tensor(Shape{rows, plan.layers.back().output[1]});
    pipeline.irecv(logits.span(), placement.rank_of(last), tag(0)).wait();
  }
  return logits;
}

void drive_pipelined(Trainer& trainer, const std::function<void(PipelinedForward&)>& drive) {
  PipelinedForward forward(trainer);
  comm::agree(trainer.world(), [&] {
    if (!forward.takes_part()) return;
    if (trainer.world().rank() != 0) return forward.serve();
    try {
      drive(forward);
    } catch (...) {  // the others leave their loop, then agree
      forward.finish();
      throw;
    }
    forward.finish();
  });
}

}  // namespace mpipe::train
