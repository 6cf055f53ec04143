// Rendering a pipeline plan for people (aligned tables) and for programs (JSON).
#include "train/plan_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/byte_format.h"
#include "core/counted.h"
#include "plan/schedule.h"

namespace mpipe::train {
namespace {

std::string seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.0f} us", s * 1e6);
}

std::string layer_span(const plan::LayerRange& r) {
  return r.size() == 1 ? fmt::format("{}", r.begin) : fmt::format("{}-{}", r.begin, r.end - 1);
}

// The mode the stages run, and "(auto)" when the planner chose it.
std::string recompute_name(const PlanReport& r) {
  const std::string name = plan::to_string(r.plan.recompute);
  return r.pipeline.recompute == plan::Recompute::kAuto ? name + " (auto)" : name;
}

// The schedule the stages run, and "(auto)" when the planner chose it.
std::string schedule_name(const PlanReport& r) {
  const std::string name = plan::to_string(r.plan.schedule);
  return r.pipeline.schedule == plan::ScheduleKind::kAuto ? name + " (auto)" : name;
}

// The partition mode, and under pipeline.balance: measured when it re-partitions.
std::string partition_name(const plan::PipelineConfig& p) {
  const std::string name = plan::to_string(p.partition_mode);
  if (p.balance != plan::Balance::kMeasured) return name;
  return fmt::format("{} (then by measured time after {})", name, counted(p.balance_after, "step"));
}

std::string header(const PlanReport& r) {
  const plan::PipelineConfig& p = r.pipeline;
  return fmt::format(
      "{}: {}, {} parameters; {} x {}, {} of {} examples, "
      "{}, recompute: {}, weight gradients: {}, partition: {}, memory limit: {}\n",
      r.experiment.source, counted(std::ssize(r.model.layers), "layer"), r.model.num_params(),
      r.plan.virtual_stages > 1
          ? fmt::format("{} x {} chunks", counted(p.stages, "rank"), r.plan.virtual_stages)
          : counted(p.stages, "stage"),
      counted(p.data_parallel, "replica"), counted(p.micro_batches, "micro-batch", "micro-batches"),
      r.plan.micro_batch_rows, schedule_name(r), recompute_name(r),
      r.plan.weight_grads == plan::WeightGrads::kGrouped
          ? fmt::format("grouped by {}", r.plan.weight_group)
          : plan::to_string(r.plan.weight_grads),
      partition_name(p),
      p.memory_limit > 0 ? format_bytes(static_cast<double>(p.memory_limit)) : "none");
}

std::string layer_table(const PlanReport& r) {
  std::string out = fmt::format("{:<6} {:<5} {:<20} {:<18} {:<18} {:>12} {:>14}\n", "stage",
                                "layer", "kind", "input", "output", "params", "fwd MFLOP/ex");
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const plan::LayerRange& range = r.plan.stages[s].layers;
    for (int i = range.begin; i < range.end; ++i) {
      const model::LayerPlan& layer = r.model.layers[static_cast<size_t>(i)];
      out += fmt::format("{:<6} {:<5} {:<20} {:<18} {:<18} {:>12} {:>14.3f}\n", s, layer.index,
                         layer.kind, layer.input.str(), layer.output.str(), layer.num_params,
                         layer.forward_flops / 1e6);
    }
  }
  return out;
}

std::string stage_table(const PlanReport& r) {
  std::string out = fmt::format("{:<6} {:<8} {:>12} {:>11} {:>10} {:>11} {:>11} {:>12} {:>10}\n",
                                "stage", "layers", "params", "GFLOP/step", "time/step",
                                "peak memory", "state", "activations", "buffers");
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    const plan::StagePlan& stage = r.plan.stages[s];
    const plan::StageMemory& m = stage.memory;
    const double gflop = (stage.forward_flops + stage.backward_flops + stage.recompute_flops) / 1e9;
    out += fmt::format("{:<6} {:<8} {:>12} {:>11.3f} {:>10} {:>11} {:>11} {:>12} {:>10}{}\n", s,
                       layer_span(stage.layers), stage.num_params, gflop,
                       seconds(stage.compute_s + stage.optimizer_s), format_bytes(m.total()),
                       format_bytes(m.state()), format_bytes(m.activations()),
                       format_bytes(m.communication), stage.fits ? "" : "  over the limit");
  }
  return out;
}

// A tied model: the stages whose copies' gradients are summed after the step, and how long.
std::string tied_exchange_line(const PlanReport& r) {
  std::vector<size_t> stages;
  double exchange_s = 0.0;
  for (size_t s = 0; s < r.plan.stages.size(); ++s) {
    if (r.plan.stages[s].tied_exchange_s == 0.0) continue;
    stages.push_back(s);
    exchange_s = r.plan.stages[s].tied_exchange_s;
  }
  if (stages.empty()) return "";
  return fmt::format(
      "tied weights: the copies on {} {} sum their gradients after the step, before the "
      "optimizer update: {}\n\n",
      stages.size() == 1 ? "stage" : "stages", fmt::join(stages, ", "), seconds(exchange_s));
}

// With chunks: each rank's stages (as the schedule places them) and predicted peak, every chunk
// at the rank's largest moment (PipelinePlan::rank_peak_bytes, what the memory limit holds for).
std::string rank_table(const PlanReport& r) {
  const std::vector<double>& peaks = r.plan.rank_peak_bytes;
  std::string out = fmt::format("{:<6} {:<12} {:>11}\n", "rank", "stages", "peak memory");
  const plan::Placement placement =
      plan::placement_for(r.plan.schedule, static_cast<int>(peaks.size()), r.plan.virtual_stages);
  for (size_t rank = 0; rank < peaks.size(); ++rank) {
    std::vector<int> stages;
    for (int chunk = 0; chunk < placement.virtual_stages; ++chunk) {
      stages.push_back(placement.stage_of(static_cast<int>(rank), chunk));
    }
    out += fmt::format("{:<6} {:<12} {:>11}\n", rank, fmt::format("{}", fmt::join(stages, ", ")),
                       format_bytes(peaks[rank]));
  }
  return out;
}

// schedule: auto: each schedule weighed, its predicted step, bubble and peak per rank.
std::string candidate_table(const PlanReport& r) {
  std::string out = fmt::format("{:<11} {:<11} {:>10} {:>7}  {}\n", "schedule", "recompute", "step",
                                "bubble", "peak memory per rank");
  for (const plan::ScheduleCandidate& c : r.plan.candidates) {
    std::string peaks;
    for (double bytes : c.peak_bytes) {
      if (!peaks.empty()) peaks += ' ';
      peaks += format_bytes(bytes);
    }
    const bool chosen = c.schedule == r.plan.schedule;
    out += fmt::format("{:<11} {:<11} {:>10} {:>6.1f}%  {}{}\n", plan::to_string(c.schedule),
                       plan::to_string(c.recompute), seconds(c.step_s), 100.0 * c.bubble_fraction,
                       peaks,
                       chosen   ? "  <- chosen"
                       : c.fits ? ""
                                : "  over the limit");
  }
  return out;
}

// The cuts between the stages, in stage order (the first layer of each stage after the first).
std::vector<int> stage_cuts(const PlanReport& r) {
  std::vector<int> cuts;
  for (size_t s = 1; s < r.plan.stages.size(); ++s) cuts.push_back(r.plan.stages[s].layers.begin);
  return cuts;
}

// Each cut's live set (docs/design/graph.md, "Networks that are not a chain"): shown for a model
// whose layers save or read values, where a cut may carry more than the last layer's output.
std::string cut_table(const PlanReport& r) {
  const model::ModelGraph& graph = r.model.graph;
  std::string out = fmt::format("{:<6} {:>12} {:>12}  {}\n", "cut", "bytes/ex", "grad bytes/ex",
                                "live set (the gradient: its layer outputs)");
  for (int cut : stage_cuts(r)) {
    std::vector<std::string> entries;
    for (int value : graph.live_set(cut)) {
      entries.push_back(fmt::format("{} {}", graph.label(value), r.model.value_shape(value).str()));
    }
    out += fmt::format("{:<6} {:>12} {:>12}  {}\n", fmt::format("{}|{}", cut - 1, cut),
                       r.model.live_bytes(cut), r.model.live_grad_bytes(cut),
                       fmt::join(entries, ", "));
  }
  return out;
}

}  // namespace

std::string plan_text(const PlanReport& r) {
  const plan::PipelinePlan& plan = r.plan;
  const plan::MachineRates& rates = plan.rates;
  std::string out = header(r) + "\n" + layer_table(r) + "\n" + stage_table(r) + "\n";
  out += tied_exchange_line(r);
  if (plan.virtual_stages > 1) out += rank_table(r) + "\n";
  if (!r.model.graph.is_chain() && plan.stages.size() > 1) out += cut_table(r) + "\n";
  if (!plan.candidates.empty()) out += candidate_table(r) + "\n";
  out += fmt::format(
      "predicted step {} | {:.1f} samples/s | bubble {:.1f}% | slowest stage {:.0f}% of the "
      "compute\n",
      seconds(plan.step_s), plan.samples_per_s, 100.0 * plan.bubble_fraction,
      100.0 * plan.largest_stage_share);
  out += fmt::format(
      "({} per rank: {}, {:.0f} GFLOP/s, {:.1f} GB/s of memory traffic{}, {:.3g} MB/s links; "
      "memory: state = parameters, gradients, optimizer state; activations = kept, recompute, "
      "temporaries, batched weight-gradient operands; buffers = messages; peak = state + "
      "activations + buffers)\n",
      r.rates_source == "assumed" ? "assumed" : "measured", counted(rates.threads, "thread"),
      rates.threads * rates.flops_per_s / 1e9, rates.threads * rates.bytes_per_s / 1e9,
      rates.optimizer_bytes_per_s > 0
          ? fmt::format(" ({:.1f} in the optimizer step)",
                        rates.threads * rates.optimizer_bytes_per_s / 1e9)
          : std::string(),
      rates.link_bytes_per_s / 1e6);
  if (r.rates_source != "assumed") {
    const plan::MachineRates assumed;
    out += fmt::format(
        "(rates {}; the plan is chosen as `mpipe train` chooses it, at the assumed {:.0f} "
        "GFLOP/s and {:.1f} GB/s per thread, and so are the schedule table's steps and the "
        "advice's numbers)\n",
        r.rates_source, assumed.flops_per_s / 1e9, assumed.bytes_per_s / 1e9);
  }
  if (!plan.fits()) out += fmt::format("does not fit: {}\n", plan.problem);
  for (const std::string& line : plan.advice) out += fmt::format("advice: {}\n", line);
  return out;
}

nlohmann::ordered_json plan_json(const PlanReport& r) {
  const plan::PipelineConfig& p = r.pipeline;
  const plan::PipelinePlan& plan = r.plan;
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const model::LayerPlan& layer : r.model.layers) {
    layers.push_back({{"index", layer.index},
                      {"kind", layer.kind},
                      {"input", layer.input.dims()},
                      {"output", layer.output.dims()},
                      {"num_params", layer.num_params},
                      {"forward_flops", layer.forward_flops}});
  }
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const plan::StagePlan& stage = plan.stages[s];
    const plan::StageMemory& m = stage.memory;
    stages.push_back({{"stage", s},
                      {"first_layer", stage.layers.begin},
                      {"last_layer", stage.layers.end - 1},
                      {"num_params", stage.num_params},
                      {"forward_flops", stage.forward_flops},
                      {"backward_flops", stage.backward_flops},
                      {"recompute_flops", stage.recompute_flops},
                      {"compute_s", stage.compute_s},
                      {"optimizer_s", stage.optimizer_s},
                      {"shard_allgather_s", stage.shard_allgather_s},
                      {"tied_exchange_s", stage.tied_exchange_s},
                      {"peak_bytes", m.total()},
                      {"evaluation_peak_bytes", stage.evaluation.total()},
                      {"fits", stage.fits},
                      {"memory",
                       {{"params", m.params},
                        {"grads", m.grads},
                        {"gradient_partials", m.gradient_partials},
                        {"optimizer_state", m.optimizer_state},
                        {"buffers", m.buffers},
                        {"kept_activations", m.kept_activations},
                        {"recompute_workspace", m.recompute_workspace},
                        {"transient", m.transient},
                        {"weight_grad_operands", m.weight_grad_operands},
                        {"communication", m.communication},
                        {"allocator_rounding", m.allocator_rounding}}}});
  }
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (const plan::ScheduleCandidate& c : plan.candidates) {
    candidates.push_back({{"schedule", plan::to_string(c.schedule)},
                          {"recompute", plan::to_string(c.recompute)},
                          {"step_s", c.step_s},
                          {"bubble_fraction", c.bubble_fraction},
                          {"peak_bytes", c.peak_bytes},
                          {"fits", c.fits},
                          {"chosen", c.schedule == plan.schedule}});
  }
  nlohmann::ordered_json cuts = nlohmann::ordered_json::array();
  for (int cut : stage_cuts(r)) {
    nlohmann::ordered_json live = nlohmann::ordered_json::array();
    for (int value : r.model.graph.live_set(cut)) {
      live.push_back(
          {{"name", r.model.graph.label(value)},
           {"shape", r.model.value_shape(value).dims()},
           {"needs_grad", r.model.graph.values()[static_cast<size_t>(value)].needs_grad()}});
    }
    cuts.push_back({{"before_layer", cut},
                    {"bytes_per_example", r.model.live_bytes(cut)},
                    {"grad_bytes_per_example", r.model.live_grad_bytes(cut)},
                    {"live", live}});
  }
  const plan::MachineRates& rates = plan.rates;
  nlohmann::ordered_json out = {
      {"config", r.experiment.source},
      {"num_layers", r.model.layers.size()},
      {"num_params", r.model.num_params()},
      {"stages", p.stages},
      {"virtual_stages", plan.virtual_stages},
      {"rank_peak_bytes", plan.rank_peak_bytes},
      {"data_parallel", p.data_parallel},
      {"micro_batches", p.micro_batches},
      {"micro_batch_rows", plan.micro_batch_rows},
      {"batch_size", r.experiment.train.batch_size},
      {"schedule", plan::to_string(plan.schedule)},
      {"schedule_setting", plan::to_string(p.schedule)},
      {"schedule_candidates", candidates},
      {"recompute", plan::to_string(plan.recompute)},
      {"recompute_setting", plan::to_string(p.recompute)},
      {"weight_grads", plan::to_string(r.plan.weight_grads)},
      {"weight_group", r.plan.weight_group},
      {"partition", plan::to_string(p.partition_mode)},
      {"balance", plan::to_string(p.balance)},
      {"memory_limit_bytes", p.memory_limit > 0 ? nlohmann::ordered_json(p.memory_limit)
                                                : nlohmann::ordered_json(nullptr)},
      {"layers", layers},
      {"stage_plans", stages},
      {"cuts", cuts},
      {"bubble_fraction", plan.bubble_fraction},
      {"step_s", plan.step_s},
      {"samples_per_s", plan.samples_per_s},
      {"largest_stage_share", plan.largest_stage_share},
      {"fits", plan.fits()},
      {"problem",
       plan.fits() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(plan.problem)},
      {"advice", plan.advice},
      {"rates",
       {{"threads", rates.threads},
        {"flops_per_s", rates.flops_per_s},
        {"input_gradient_flops_per_s", rates.input_gradient_flops_per_s},
        {"weight_flops_per_s", rates.weight_flops_per_s},
        {"batched_weight_flops_per_s", rates.batched_weight_flops_per_s},
        {"bytes_per_s", rates.bytes_per_s},
        {"optimizer_bytes_per_s", rates.optimizer_bytes_per_s},
        {"link_bytes_per_s", rates.link_bytes_per_s},
        {"link_latency_s", rates.link_latency_s}}},
      {"rates_source", r.rates_source}};
  return out;
}

}  // namespace mpipe::train
