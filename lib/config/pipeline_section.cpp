// The `pipeline:` section: stages, data parallelism, micro-batches, chunks per rank, schedule,
// re-materialization, weight gradients, the partition of layers into stages and the memory limit
// per rank.
#include <fmt/format.h>

#include "config/bounded.h"
#include "config/byte_size.h"
#include "config/map_reader.h"
#include "config/sections.h"
#include "core/error.h"

namespace mpipe::config {
namespace {

// A count >= 1, or `auto` (returned as 0).
int read_count_or_auto(const Field& field) {
  if (field.node().IsScalar() && field.text() == "auto") return 0;
  int64_t value = 0;
  if (!field.node().IsScalar() || !YAML::convert<int64_t>::decode(field.node(), value)) {
    field.fail("expected an integer or 'auto', got " + field.describe());
  }
  if (value < 1) field.fail("must be >= 1 or 'auto', got " + field.text());
  return read_int32(field);
}

// `auto`, `uniform`, or a list of layer counts (each >= 1) into config.partition.
void read_partition(const Field& field, plan::PipelineConfig& config) {
  using plan::PartitionMode;
  if (field.node().IsScalar() && field.text() == "auto") {
    config.partition_mode = PartitionMode::kAuto;
    return;
  }
  if (field.node().IsScalar() && field.text() == "uniform") {
    config.partition_mode = PartitionMode::kUniform;
    return;
  }
  if (!field.node().IsSequence()) {
    field.fail("expected 'auto', 'uniform' or a list of integers, got " + field.describe());
  }
  if (field.node().size() == 0) field.fail("must not be an empty list (use 'auto' or 'uniform')");
  config.partition_mode = PartitionMode::kManual;
  for (const Field& entry : field.elements("a list")) {
    config.partition.push_back(read_int32(entry, at_least(1)));
  }
}

// A byte size ("6GiB", "512MiB", "2G", bytes as an integer), or `none` (returned as 0).
int64_t read_memory_limit(const Field& field) {
  if (!field.node().IsScalar()) {
    field.fail("expected a size such as 6GiB, 512MiB or 2G, got " + field.describe());
  }
  if (field.text() == "none") return 0;
  try {
    return parse_byte_size(field.text());
  } catch (const InputError& e) {
    field.fail(e.what());
  }
}

// pipeline.balance and its counts, which only `measured` of an `auto` partition uses.
void read_balance(const MapReader& map, plan::PipelineConfig& config) {
  const auto balance = map.get("balance");
  if (balance) config.balance = balance->as_choice(plan::kBalanceNames);
  const bool measured = config.balance == plan::Balance::kMeasured;
  if (measured && config.partition_mode != plan::PartitionMode::kAuto) {
    balance->fail(fmt::format(
        "measured re-partitions the auto partition; pipeline.partition is {}",
        config.partition_mode == plan::PartitionMode::kUniform ? "uniform" : "a list of counts"));
  }
  auto read_count = [&](const char* key, int& into, int least) {
    if (auto f = map.get(key)) {
      if (!measured) f->fail("is used only with pipeline.balance: measured");
      into = read_int32(*f, at_least(least));
    }
  };
  read_count("balance_after", config.balance_after, 1);
  read_count("balance_every", config.balance_every, 0);
  read_count("balance_moves", config.balance_moves, 1);
}

}  // namespace

plan::PipelineConfig parse_pipeline(const Field& section) {
  const MapReader map(
      section, {"stages", "data_parallel", "micro_batches", "virtual_stages", "schedule",
                "recompute", "weight_grads", "weight_group", "partition", "memory_limit", "balance",
                "balance_after", "balance_every", "balance_moves"});
  plan::PipelineConfig config;
  if (auto f = map.get("stages")) config.stages = read_count_or_auto(*f);
  if (auto f = map.get("data_parallel")) {
    config.data_parallel = read_count_or_auto(*f);
    if (config.data_parallel == 0 && config.stages == 0) {
      f->fail("cannot be 'auto' when pipeline.stages is 'auto'");
    }
  }
  if (auto f = map.get("micro_batches")) config.micro_batches = read_int32(*f, at_least(1));
  if (auto f = map.get("virtual_stages")) config.virtual_stages = read_int32(*f, at_least(1));
  if (auto f = map.get("schedule")) config.schedule = f->as_choice(plan::kScheduleNames);
  // zbv's V is two chunks per rank; another explicit count is refused at start-up
  // (plan::schedule_shape_problem).
  if (config.schedule == plan::ScheduleKind::kZbv && !map.get("virtual_stages")) {
    config.virtual_stages = 2;
  }
  if (auto f = map.get("recompute")) {
    config.recompute = f->as_choice(plan::kRecomputeNames);
  }
  if (auto f = map.get("weight_grads")) {
    config.weight_grads = f->as_choice(plan::kWeightGradsNames);
  }
  if (auto f = map.get("weight_group")) {
    if (config.weight_grads != plan::WeightGrads::kGrouped) {
      f->fail("is used only with pipeline.weight_grads: grouped");
    }
    config.weight_group = read_count_or_auto(*f);  // (at most M: train::check_virtual_stages)
  }
  if (auto f = map.get("memory_limit")) config.memory_limit = read_memory_limit(*f);
  if (auto f = map.get("partition")) {
    read_partition(*f, config);
    const auto entries = static_cast<int>(config.partition.size());
    const int stages = config.stages * config.virtual_stages;
    if (config.stages > 0 && entries > 0 && entries != stages) {
      f->fail(config.virtual_stages == 1
                  ? fmt::format("must have as many entries as pipeline.stages = {}, got {}",
                                config.stages, entries)
                  : fmt::format("must have as many entries as pipeline.stages x "
                                "pipeline.virtual_stages = {}, got {}",
                                stages, entries));
    }
  }
  read_balance(map, config);
  return config;
}

}  // namespace mpipe::config
