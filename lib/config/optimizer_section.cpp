// The `optimizer:` section and its `schedule:` map.
#include <fmt/format.h>

#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {
namespace {

optim::LrScheduleConfig parse_schedule(const Field& section) {
  const MapReader map(section, {"kind", "warmup_steps", "step_size", "gamma", "min_lr",
                                "decay_steps", "decay_fraction", "total_steps"});
  optim::LrScheduleConfig config;
  if (auto f = map.get("kind")) {
    config.kind = f->as_choice(optim::kLrScheduleNames);
  }
  if (auto f = map.get("warmup_steps")) config.warmup_steps = read_int(*f, at_least(0));
  if (auto f = map.get("step_size")) config.step_size = read_int(*f, at_least(1));
  if (auto f = map.get("gamma")) config.gamma = read_double(*f, above(0));
  if (auto f = map.get("min_lr")) config.min_lr = read_double(*f, at_least(0));
  if (auto f = map.get("decay_steps")) config.decay_steps = read_int(*f, at_least(0));
  if (auto f = map.get("decay_fraction")) config.decay_fraction = read_double(*f, left_open(0, 1));
  if (auto f = map.get("total_steps")) config.total_steps = read_int(*f, at_least(0));
  return config;
}

}  // namespace

optim::OptimizerConfig parse_optimizer(const Field& section) {
  const MapReader map(
      section, {"kind", "lr", "momentum", "nesterov", "weight_decay", "decay_exempt", "beta1",
                "beta2", "eps", "clip_norm", "shard_across_replicas", "schedule"});
  optim::OptimizerConfig config;
  if (auto f = map.get("kind")) {
    config.kind = f->as_choice(optim::kOptimizerNames);
  }
  if (auto f = map.get("lr")) config.lr = read_double(*f, above(0));
  if (auto f = map.get("momentum")) config.momentum = read_double(*f, half_open(0, 1));
  if (auto f = map.get("weight_decay")) config.weight_decay = read_double(*f, at_least(0));
  if (auto f = map.get("decay_exempt")) config.decay_exempt = f->as_bool();
  if (auto f = map.get("beta1")) config.beta1 = read_double(*f, half_open(0, 1));
  if (auto f = map.get("beta2")) config.beta2 = read_double(*f, half_open(0, 1));
  if (auto f = map.get("eps")) config.eps = read_double(*f, above(0));
  if (auto f = map.get("clip_norm")) config.clip_norm = read_double(*f, at_least(0));
  if (auto f = map.get("shard_across_replicas")) config.shard_across_replicas = f->as_bool();
  if (auto f = map.get("nesterov")) {
    config.nesterov = f->as_bool();
    if (config.nesterov && config.momentum <= 0) {
      f->fail(fmt::format("requires optimizer.momentum > 0, got optimizer.momentum = {}",
                          config.momentum));
    }
  }
  config.schedule = parse_schedule(map.child("schedule"));
  return config;
}

}  // namespace mpipe::config
