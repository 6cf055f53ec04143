// Moving layers between the stages of a pipeline at a step boundary (pipeline.balance: measured):
// each stage sends the state tensors (weights, buffers, optimizer state, named as checkpoints name
// them, train/stage_tensors.h) that another stage's new layers need, point to point.
#pragma once

#include <functional>
#include <vector>

#include "checkpoint/safetensors.h"
#include "comm/communicator.h"
#include "model/model_builder.h"
#include "model/partition.h"
#include "pipeline/planner.h"

namespace mpipe::train {

struct LayerMove {
  const comm::Communicator* pipeline = nullptr;  // one replica's stages, rank = stage
  int tag = 0;                                   // of the moved tensors' messages
  std::vector<model::LayerRange> from;           // the partition the state is in
  // Per stage of the new partition, the state tensors it restores (state_layout).
  std::vector<std::vector<checkpoint::TensorInfo>> wanted;
};

// Collective over move.pipeline: this stage's old state `mine` (stage_state of its layers in
// move.from) goes where move.wanted says, one message per pair of stages, and every tensor this
// stage wants is offered to `into` (its own from `mine`, the others' as received). Throws Error
// when a tensor another stage wants is not in `mine`.
void move_layer_state(const LayerMove& move, const std::vector<checkpoint::TensorView>& mine,
                      const checkpoint::TensorDestination& into);

// The tensor bytes each stage holds at once while its layers move (Trainer::repartition): its
// old layers' state (kept until sent), its new layers' state, and what it receives, the
// weights, buffers and `optimizer_slots` floats per weight of the layers it did not hold.
std::vector<double> move_peak_bytes(const pipeline::PipelinePlan& from,
                                    const pipeline::PipelinePlan& to, const model::ModelPlan& model,
                                    int optimizer_slots);

}  // namespace mpipe::train
