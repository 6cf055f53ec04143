// The layout the daemon gives an experiment that resumes a checkpoint (see resume_layout.h).
#include "serve/resume_layout.h"

#include <fmt/format.h>

#include <charconv>

#include "checkpoint/resume_settings.h"
#include "config/experiment.h"
#include "core/error.h"
#include "job/preflight.h"
#include "supervise/planner_check.h"
#include "supervise/replan.h"
#include "train/resumed_weight_grads.h"
#include "train/run_checkpoint.h"

namespace mpipe::serve {
namespace {

// `settings`' value of `key` as a positive count; nullopt when it is missing or not one.
std::optional<int> stored_count(const checkpoint::Settings& settings, const std::string& key) {
  const auto found = settings.find(key);
  if (found == settings.end()) return std::nullopt;
  int value = 0;
  const std::string& text = found->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1) return std::nullopt;
  return value;
}

}  // namespace

supervise::Layout world_layout(config::Experiment experiment, int world_size) {
  job::plan_for_any_world(experiment, world_size);
  return supervise::experiment_layout(experiment, world_size);
}

std::optional<ResumeLayout> resume_layout(const std::string& config_path,
                                          const std::vector<std::string>& overrides,
                                          const std::string& run_dir, int world_size) {
  const std::optional<train::StoredSettings> stored = train::newest_stored_settings(run_dir);
  if (!stored) return std::nullopt;
  const std::optional<int> global =
      stored_count(stored->settings, checkpoint::kGlobalMicroBatchesKey);
  const std::optional<int> micro_batches = stored_count(stored->settings, "pipeline.micro_batches");
  if (!global || !micro_batches || *global % *micro_batches != 0) return std::nullopt;
  ResumeLayout resume{
      .step = stored->step,
      .saved = {.stages = 0, .replicas = *global / *micro_batches, .micro_batches = *micro_batches},
      .layout = {},
      .bit_identical = true,
      .settings = {}};
  // Planned as the resume runs it: weight_grads: auto keeps the checkpoint's choice, which the
  // memory check (PlannerCheck) and tree_weight_grads must see too.
  config::Experiment experiment = config::load_experiment(config_path, overrides);
  train::keep_weight_grads(train::checkpoint_weight_grads(run_dir, *stored), experiment.pipeline);
  const bool tree = supervise::tree_weight_grads(experiment);
  try {
    resume.layout = world_layout(experiment, world_size);
    if (resume.layout.replicas * resume.layout.micro_batches == *global &&
        supervise::keeps_bit_identity(resume.saved, resume.layout, tree)) {
      return resume;
    }
  } catch (const InputError&) {
    // (No plan for this world, e.g. pipeline.stages: 3 on 2 ranks: re-planned below.)
  }
  try {
    const supervise::Replan plan =
        supervise::replan(resume.saved, world_size, tree, supervise::PlannerCheck(experiment),
                          supervise::SlotUse::kEvery);
    resume.layout = plan.layout;
    resume.bit_identical = plan.bit_identical;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: cannot resume step {} on {} rank{}: {}", experiment.source,
                                 resume.step, world_size, world_size == 1 ? "" : "s", e.what()));
  }
  resume.settings = supervise::layout_settings(
      resume.layout, supervise::needs_auto_partition(experiment, resume.layout));
  return resume;
}

std::string describe(const ResumeLayout& resume, int world_size) {
  return fmt::format(
      "resuming step {} on {} rank{} as {}, re-planned from the checkpoint's {} replica{} x {} "
      "micro-batch{} ({})",
      resume.step, world_size, world_size == 1 ? "" : "s", supervise::to_string(resume.layout),
      resume.saved.replicas, resume.saved.replicas == 1 ? "" : "s", resume.saved.micro_batches,
      resume.saved.micro_batches == 1 ? "" : "es",
      resume.bit_identical
          ? "bit-identical"
          : "not bit-identical: a change of D keeps the bits only under weight_grads: tree, "
            "between powers of two");
}

}  // namespace mpipe::serve
