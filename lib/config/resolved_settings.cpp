// Resolved settings: each section's struct written out key by key, with YAML spellings.
#include "config/resolved_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <type_traits>
#include <variant>

#include "optim/lr_schedule.h"
#include "plan/pipeline_config.h"
#include "plan/schedule.h"

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

std::string text(bool value) { return value ? "true" : "false"; }
std::string text(const std::string& value) { return value; }
std::string text(const std::vector<int64_t>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}
template <typename Number>
requires std::is_arithmetic_v<Number> std::string text(Number value) {
  return fmt::format("{}", value);  // doubles: the shortest text that reads back exactly
}
std::string count_or_auto(int count) { return count == 0 ? "auto" : std::to_string(count); }

std::string text(data::DatasetKind kind) { return std::string(name_of(data::kDatasetNames, kind)); }

std::string text(optim::OptimizerKind kind) {
  return std::string(name_of(optim::kOptimizerNames, kind));
}

std::string text(optim::LrScheduleKind kind) {
  return std::string(name_of(optim::kLrScheduleNames, kind));
}

void add_model(const model::ModelSpec& model, Settings& out) {
  out["model.loss"] = model.loss;
  // Only when set, as model.init.
  if (model.label_smoothing > 0.0) out["model.label_smoothing"] = text(model.label_smoothing);
  // Only when set: a run saved before model.init existed resumes with the default.
  if (model.init != model::ModelInit::kDefault) {
    out["model.init"] = std::string(name_of(model::kModelInitNames, model.init));
  }
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const model::LayerSpec& layer = model.layers[i];
    const std::string prefix = fmt::format("model.layers[{}].", i);
    out[prefix + "type"] = layer.kind;
    for (const auto& [name, attr] : layer.attrs) {
      out[prefix + name] = std::visit([](const auto& value) { return text(value); }, attr.value);
    }
    // The graph's edges, only where a layer has them (a chain's settings are unchanged).
    if (layer.save) out[prefix + "save"] = layer.save->name;
    if (layer.input) out[prefix + "input"] = layer.input->name;
    if (!layer.reads.empty()) {
      std::vector<std::string> names;
      for (const model::ValueRef& read : layer.reads) names.push_back(read.name);
      out[prefix + "read"] = fmt::format("[{}]", fmt::join(names, ", "));
    }
  }
}

void add_data(const data::DataConfig& data, Settings& out) {
  out["data.dataset"] = text(data.kind);
  out["data.path"] = data.path;
  out["data.flatten"] = text(data.flatten);
  out["data.normalize"] = text(data.normalize);
  out["data.augment_crop_padding"] = text(data.augment_crop_padding);
  out["data.augment_flip"] = text(data.augment_flip);
  if (data.task == data::DataTask::kDenoise) {  // (absent from classification runs' settings)
    out["data.task"] = std::string(name_of(data::kDataTaskNames, data.task));
    out["data.noise_std"] = text(data.noise_std);
  }
  out["data.num_examples"] = text(data.num_examples);
  out["data.features"] = text(data.features);
  out["data.classes"] = text(data.classes);
  out["data.seq_len"] = text(data.seq_len);
  out["data.val_fraction"] = text(data.val_fraction);
  out["data.vocab"] = text(data.vocab);
  out["data.tokens"] = text(data.tokens);
  // Keys only shard data has (never empty lists).
  if (data.kind == data::DatasetKind::kTokens || data.kind == data::DatasetKind::kPairs) {
    out["data.train"] = fmt::format("[{}]", fmt::join(data.train_shards, ", "));
    if (!data.train_mix.empty()) {
      std::vector<std::string> lists;
      for (const data::WeightedShards& list : data.train_mix) {
        lists.push_back(fmt::format("{{shards: [{}], weight: {}}}", fmt::join(list.shards, ", "),
                                    text(list.weight)));
      }
      out["data.train"] = fmt::format("[{}]", fmt::join(lists, ", "));
    }
    out["data.val"] = fmt::format("[{}]", fmt::join(data.val_shards, ", "));
    out["data.tokenizer"] = data.tokenizer;
  }
  if (data.kind == data::DatasetKind::kPairs) {
    out["data.source_len"] = text(data.source_len);
    out["data.target_len"] = text(data.target_len);
  }
}

void add_train(const train::TrainConfig& train, Settings& out) {
  out["train.steps"] = text(train.steps);
  out["train.batch_size"] = text(train.batch_size);
  out["train.seed"] = text(train.seed);
  out["train.eval_every"] = text(train.eval_every);
  out["train.eval_batches"] = text(train.eval_batches);
  out["train.eval_batch_size"] = text(train.eval_batch_size);
  out["train.eval_bleu_sentences"] = text(train.eval_bleu_sentences);
  out["train.on_nonfinite"] = name_of(train::kOnNonFiniteNames, train.on_nonfinite);
  out["train.max_skips_in_a_row"] = text(train.max_skips_in_a_row);
  out["train.precision"] = kernels::to_string(train.precision);
}

void add_optimizer(const optim::OptimizerConfig& optimizer, int64_t train_steps, Settings& out) {
  out["optimizer.kind"] = text(optimizer.kind);
  out["optimizer.lr"] = text(optimizer.lr);
  out["optimizer.momentum"] = text(optimizer.momentum);
  out["optimizer.nesterov"] = text(optimizer.nesterov);
  out["optimizer.weight_decay"] = text(optimizer.weight_decay);
  out["optimizer.decay_exempt"] = text(optimizer.decay_exempt);
  out["optimizer.beta1"] = text(optimizer.beta1);
  out["optimizer.beta2"] = text(optimizer.beta2);
  out["optimizer.eps"] = text(optimizer.eps);
  out["optimizer.clip_norm"] = text(optimizer.clip_norm);
  out["optimizer.shard_across_replicas"] = text(optimizer.shard_across_replicas);
  out["optimizer.schedule.kind"] = text(optimizer.schedule.kind);
  out["optimizer.schedule.warmup_steps"] = text(optimizer.schedule.warmup_steps);
  out["optimizer.schedule.step_size"] = text(optimizer.schedule.step_size);
  out["optimizer.schedule.gamma"] = text(optimizer.schedule.gamma);
  out["optimizer.schedule.min_lr"] = text(optimizer.schedule.min_lr);
  out["optimizer.schedule.decay_steps"] = text(optimizer.schedule.decay_steps);
  out["optimizer.schedule.decay_fraction"] = text(optimizer.schedule.decay_fraction);
  // The length in steps, not "train.steps": a resume keeps it when train.steps changes.
  out["optimizer.schedule.total_steps"] = text(optim::schedule_steps(optimizer, train_steps));
}

void add_pipeline(const plan::PipelineConfig& pipeline, Settings& out) {
  out["pipeline.stages"] = count_or_auto(pipeline.stages);
  out["pipeline.data_parallel"] = count_or_auto(pipeline.data_parallel);
  out["pipeline.micro_batches"] = text(pipeline.micro_batches);
  out["pipeline.virtual_stages"] = text(pipeline.virtual_stages);
  out["pipeline.schedule"] = plan::to_string(pipeline.schedule);
  out["pipeline.recompute"] = plan::to_string(pipeline.recompute);
  out["pipeline.weight_grads"] = plan::to_string(pipeline.weight_grads);
  // (Only where it is used: the settings of runs under the other choices stay as they were.)
  if (pipeline.weight_grads == plan::WeightGrads::kGrouped) {
    out["pipeline.weight_group"] = count_or_auto(pipeline.weight_group);
  }
  out["pipeline.partition"] =
      pipeline.partition_mode == plan::PartitionMode::kManual
          ? text(std::vector<int64_t>(pipeline.partition.begin(), pipeline.partition.end()))
          : plan::to_string(pipeline.partition_mode);
  // In bytes, as parse_byte_size reads it back: the limit changes the `auto` partition.
  out["pipeline.memory_limit"] = pipeline.memory_limit == 0 ? "none" : text(pipeline.memory_limit);
}

}  // namespace

std::map<std::string, std::string> resolved_settings(const Experiment& experiment) {
  Settings out;
  add_model(experiment.model, out);
  add_data(experiment.data, out);
  add_train(experiment.train, out);
  add_optimizer(experiment.optimizer, experiment.train.steps, out);
  add_pipeline(experiment.pipeline, out);
  out["checkpoint.every"] = text(experiment.checkpoint.every);
  out["checkpoint.keep"] = text(experiment.checkpoint.keep);
  out["checkpoint.peer_copy"] = text(experiment.checkpoint.peer_copy);
  out["log.every"] = text(experiment.log.every);
  out["log.level"] = experiment.log.level;
  out["log.trace_steps"] = text(experiment.log.trace_steps);
  out["log.peak_flops"] =
      experiment.log.peak_flops > 0 ? text(experiment.log.peak_flops) : "measured";
  out["log.tensorboard"] = text(experiment.log.tensorboard);
  return out;
}

}  // namespace mpipe::config
