// `mpipe schedule`: prints a pipeline schedule as a grid (one process).
#include "schedule_command.h"

#include <fmt/ranges.h>

#include <cstdio>
#include <vector>

#include "option_checks.h"
#include "plan/grid.h"
#include "plan/pipeline_config.h"
#include "plan/schedule.h"

namespace mpipe::app {

ScheduleCommand::ScheduleCommand(CLI::App& app) {
  app_ = app.add_subcommand("schedule", "Print a pipeline schedule as a grid");
  std::vector<std::string> schedules;
  for (plan::ScheduleKind kind : plan::kConcreteSchedules) {
    schedules.push_back(plan::to_string(kind));
  }
  schedules.push_back(plan::to_string(plan::ScheduleKind::kInterleaved));
  schedules.push_back(plan::to_string(plan::ScheduleKind::kZbv));
  app_->add_option("--schedule", schedule_kind_,
                   fmt::format("The schedule to print: {}", fmt::join(schedules, ", ")))
      ->check(unnamed(CLI::IsMember(schedules)))
      ->capture_default_str();
  app_->add_option("--stages", stages_, "Pipeline stages K (1 to 64)")
      ->check(unnamed(CLI::Range(1, 64)))
      ->capture_default_str();
  app_->add_option("--micro-batches", micro_batches_, "Micro-batches M (1 to 1024)")
      ->check(unnamed(CLI::Range(1, 1024)))
      ->capture_default_str();
  app_->add_option("--virtual-stages", virtual_stages_,
                   "Model chunks per rank v, 1 to 16 (interleaved: chunk c of rank r is stage r + "
                   "c*K; zbv: 2, implied)")
      ->check(unnamed(CLI::Range(1, 16)))
      ->capture_default_str();
  // The schedule's shape is checked with the options, so every rank refuses it alike.
  app_->callback([this] {
    const plan::ScheduleKind kind = plan::parse_schedule_kind(schedule_kind_);
    if (kind == plan::ScheduleKind::kZbv && app_->count("--virtual-stages") == 0) {
      virtual_stages_ = 2;  // the V
    }
    if (auto problem =
            plan::schedule_shape_problem(kind, stages_, micro_batches_, virtual_stages_)) {
      const bool micro_batches =
          problem->setting == plan::ScheduleShapeProblem::Setting::kMicroBatches;
      throw CLI::ValidationError(micro_batches ? "--micro-batches" : "--virtual-stages",
                                 problem->message);
    }
  });
}

int ScheduleCommand::run() {
  std::fputs(plan::describe_schedule(plan::parse_schedule_kind(schedule_kind_), stages_,
                                     micro_batches_, virtual_stages_)
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace mpipe::app
