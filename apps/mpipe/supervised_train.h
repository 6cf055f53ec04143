// `mpipe supervise -- train CONFIG ...`: one run, re-planned by the supervisor on the hosts that
// answer after a loss (supervise::replan) and relaunched with --resume-or-start on that layout;
// widened the same way when hosts answer again (supervise::plan_wider).
#pragma once

#include "supervise/layout.h"
#include "supervise/planner_check.h"
#include "supervise/train_command.h"
#include "supervise/widening.h"
#include "supervised_job.h"

namespace mpipe::app {

class SupervisedTrain : public SupervisedJob {
 public:
  // `command`: `train CONFIG [options]`; `slots`: those of the first launch's hosts. Throws
  // InputError for a bad command or config, or a layout the slots cannot hold.
  SupervisedTrain(const std::vector<std::string>& command, int slots);

  int ranks(const std::vector<supervise::HostSlots>&) const override { return layout_.ranks(); }
  std::vector<std::string> command() const override { return command_; }
  void watch() override { recoveries_.watch(); }
  std::optional<std::string> prepare_relaunch(const LostHosts& lost) override;
  bool under_way(supervise::RunRecoveries::Clock::time_point launched) const override;
  std::optional<std::string> plan_widening(const ReturnedHosts& returned) override;
  bool finished_since(supervise::RunRecoveries::Clock::time_point launched) const override;
  bool widen(supervise::RunRecoveries::Clock::time_point stopped_at) override;
  void ended(bool completed) override;

 private:
  supervise::TrainCommand train_;
  // Judges the layouts of the experiment (check_.experiment()); before each re-plan, as the
  // relaunch resumes the run's newest checkpoint (PlannerCheck::resume_from).
  supervise::PlannerCheck check_;
  supervise::Layout layout_;
  std::vector<std::string> command_;
  supervise::RunRecoveries recoveries_;
  supervise::Widening widening_;  // the last one planned (plan_widening)
};

}  // namespace mpipe::app
