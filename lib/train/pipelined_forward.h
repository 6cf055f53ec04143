// PipelinedForward: decoding's forward passes through the run's own pipeline (the first replica's
// stages, in evaluation mode), driven by world rank 0, so no rank needs the whole model.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "train/trainer.h"

namespace mpipe::train {

// One forward: world rank 0 (stage 0 of replica 0) broadcasts the rows and the position over the
// first replica's pipeline group; each of its ranks runs its chunks' stages in global stage order,
// each receiving its input bundle from the previous stage's rank and sending its output to the
// next's (one message a hop); the last stage sends rank 0 the logits at the position. Blocking
// and one hop at a time: a stage holds one forward of `rows` rows. A stage that fails mid-forward
// fails as it would mid-step: pipeline.memory_limit ends the job from that rank
// (MemoryLimitExceeded), and the watchdog ends a wait for a rank that has left.
class PipelinedForward {
 public:
  // The trainer's stages and groups; nothing is communicated yet.
  explicit PipelinedForward(Trainer& trainer);

  // Whether this rank takes part: the first replica's ranks.
  bool takes_part() const;

  // World rank 0: the logits [rows, vocab] at position `position` of the model's output
  // [rows, positions, vocab], for the data inputs `data` (the graph's, in order, rows first).
  Tensor logits_at(std::vector<Tensor> data, int64_t position);
  // World rank 0: ends the other ranks' serve(); call it however the decoding ends (once).
  void finish();
  // The first replica's other ranks: their part of every forward rank 0 asks for, until finish().
  void serve();

 private:
  // This rank's part of one forward of `rows` rows, every chunk in global stage order: the
  // logits on world rank 0, an empty tensor elsewhere.
  Tensor run(std::vector<Tensor> data, int64_t rows, int64_t position);

  Trainer& trainer_;
  int64_t forwards_ = 0;  // the round of the next forward's tags
  bool finished_ = false;
};

// Collective over the trainer's world: `drive` runs on world rank 0 with a PipelinedForward of the
// trainer's pipeline while the first replica's other ranks serve its forwards and the other
// replicas wait (in comm::agree, under the caller's watch scope). When `drive` throws on rank 0,
// the others leave their loop and every rank throws AgreedError (comm::agree).
void drive_pipelined(Trainer& trainer, const std::function<void(PipelinedForward&)>& drive);

}  // namespace mpipe::train
