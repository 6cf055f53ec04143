// Tests for memory from the op list: the moments one pass over a stage's program gives.
#include "pipeline/program_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/model_builder.h"
#include "pipeline/planner.h"
#include "pipeline/schedule.h"

namespace mpipe::pipeline {
namespace {

using model::AttrValue;

model::ModelSpec model_of(
    const std::vector<std::pair<std::string, std::map<std::string, AttrValue>>>& ls) {
  model::ModelSpec spec;
  spec.where = {"exp.yaml", 5, "model"};
  for (size_t i = 0; i < ls.size(); ++i) {
    const std::string path = "model.layers[" + std::to_string(i) + "]";
    model::LayerSpec layer{
        .kind = ls[i].first, .attrs = {}, .where = {"exp.yaml", 6 + static_cast<int>(i), path}};
    for (const auto& [key, value] : ls[i].second) {
      layer.attrs[key] = {.value = value, .where = {"exp.yaml", 6 + static_cast<int>(i), path}};
    }
    spec.layers.push_back(std::move(layer));
  }
  return spec;
}

std::vector<Program> programs_of(ScheduleKind kind, int k, int m) {
  std::vector<Program> programs;
  for (int s = 0; s < k; ++s) programs.push_back(make_program(kind, k, m, s));
  return programs;
}

double peak(const model::MemoryModel& memory, int num_layers,
            const std::vector<model::StashProfile>& moments, int stage, int k) {
  double largest = 0.0;
  for (const model::StashProfile& moment : moments) {
    largest =
        std::max(largest, memory.stage(0, num_layers, moment, stage == 0, stage == k - 1).total());
  }
  return largest;
}

TEST(ProgramMemory, EqualsTheFormulasPerSchedule) {
  const model::ModelSpec specs[] = {
      model_of({{"linear", {{"units", int64_t{64}}}},
                {"relu", {}},
                {"linear", {{"units", int64_t{16}}}}}),
      model_of({{"avg_pool2d", {{"kernel", int64_t{2}}}},
                {"flatten", {}},
                {"linear", {{"units", int64_t{3}}}}}),
  };
  const Shape inputs[] = {Shape{32}, Shape{1, 8, 8}};
  int compared = 0;
  for (int i = 0; i < 2; ++i) {
    const model::ModelPlan plan = model::plan_model(specs[i], inputs[i]);
    const model::MemoryModel memory(model::layer_costs(plan), 4, 1);
    const int num_layers = static_cast<int>(plan.layers.size());
    for (ScheduleKind kind : {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB, ScheduleKind::kZbH1}) {
      for (Recompute r :
           {Recompute::kAlways, Recompute::kExceptLast, Recompute::kNever, Recompute::kPerLayer}) {
        for (int k = 1; k <= 5; ++k) {
          for (int m = 1; m <= 9; ++m) {
            const std::vector<Program> programs = programs_of(kind, k, m);
            // Where the formulas' assumptions hold: 1F1B and ZB-H1 at M = 1 run GPipe's program
            // (the pass gives GPipe's peak), and the formula gave ZB-H1 at M <= K the W ops
            // pending at the moment with the most micro-batches in flight together with that
            // moment's messages, where the pass takes each op's own.
            const bool formulas_apply =
                kind == ScheduleKind::kGpipe || (kind == ScheduleKind::kOneFOneB && m > 1) || m > k;
            if (!formulas_apply) continue;
            for (int s = 0; s < k; ++s) {
              const double formulas =
                  peak(memory, num_layers, stash_profiles(kind, r, k, m, s), s, k);
              const double pass =
                  peak(memory, num_layers, program_moments(programs, s, r, false), s, k);
              EXPECT_EQ(pass, formulas)
                  << to_string(kind) << " recompute " << static_cast<int>(r) << " K " << k << " M "
                  << m << " stage " << s << " model " << i;
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace mpipe::pipeline
