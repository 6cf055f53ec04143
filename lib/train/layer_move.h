// Moving layers between the stages of a pipeline at a step boundary (pipeline.balance: measured):
// each rank sends the state tensors (weights, buffers, optimizer state, named as checkpoints name
// them, train/stage_tensors.h) that another rank's new layers need, point to point. With virtual
// stages a rank holds several stages (its chunks), placed alike before and after the move.
#pragma once

#include <functional>
#include <vector>

#include "checkpoint/safetensors.h"
#include "comm/communicator.h"
#include "model/model_builder.h"
#include "plan/partition.h"
#include "plan/placement.h"
#include "plan/planner.h"

namespace mpipe::train {

struct LayerMove {
  const comm::Communicator* pipeline = nullptr;  // one replica's ranks
  int tag = 0;                                   // of the moved tensors' messages
  plan::Placement placement;                     // which rank holds each stage
  std::vector<plan::LayerRange> from;            // per stage: the partition the state is in
  // Per rank, the state tensors its chunks restore in the new partition (state_layout of all
  // their layers).
  std::vector<std::vector<checkpoint::TensorInfo>> wanted;
};

// Collective over move.pipeline: this rank's old state `mine` (stage_state of its chunks' layers
// in move.from) goes where move.wanted says, one message per pair of ranks, and every tensor this
// rank wants is offered to `into` (its own from `mine`, the others' as received). Throws Error
// when a tensor another rank wants is not in `mine`.
void move_layer_state(const LayerMove& move, const std::vector<checkpoint::TensorView>& mine,
                      const checkpoint::TensorDestination& into);

// The tensor bytes each rank holds at once while its layers move (Trainer::repartition): its
// chunks' old layers' state (kept until sent), their new layers' state, and what it receives, the
// weights, buffers and `optimizer_slots` floats per weight of the layers it did not hold.
std::vector<double> move_peak_bytes(const plan::PipelinePlan& from, const plan::PipelinePlan& to,
                                    const plan::Placement& placement, const model::ModelPlan& model,
                                    int optimizer_slots);

}  // namespace mpipe::train
