// Section parsers: each turns one top-level section of an experiment (possibly absent, then
// all defaults) into the struct its module owns, checking every key and value.
#pragma once

#include "checkpoint/checkpoint_config.h"
#include "comm/comm_config.h"
#include "config/field.h"
#include "config/train_config.h"
#include "data/data_config.h"
#include "log/log_config.h"
#include "model/layer_spec.h"
#include "optim/optimizer_config.h"
#include "plan/pipeline_config.h"

namespace mpipe::config {

model::ModelSpec parse_model(const Field& section);
data::DataConfig parse_data(const Field& section);
train::TrainConfig parse_train(const Field& section);
optim::OptimizerConfig parse_optimizer(const Field& section);
plan::PipelineConfig parse_pipeline(const Field& section);
checkpoint::CheckpointConfig parse_checkpoint(const Field& section);
log::LogConfig parse_log(const Field& section);
comm::CommConfig parse_comm(const Field& section);

}  // namespace mpipe::config
