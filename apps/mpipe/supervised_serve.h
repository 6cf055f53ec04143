// `mpipe supervise -- serve --spool DIR ...`: the daemon, relaunched on every slot of the hosts
// that answer after a loss; it resumes the spool's active experiment first, re-planned for its
// ranks (serve::resume_layout), then takes the queue. The supervisor records each recovery in
// that experiment's metrics.jsonl, and in its summary.json once the daemon has finished it. When
// hosts answer again, the daemon is stopped (its experiment interrupted with a checkpoint) and
// relaunched on every slot of the wider hosts, where the experiment resumes re-planned the same
// way; each widening is recorded beside the recoveries.
#pragma once

#include <map>

#include "supervise/serve_command.h"
#include "supervise/widening.h"
#include "supervised_job.h"

namespace mpipe::app {

class SupervisedServe : public SupervisedJob {
 public:
  // `command`: `serve --spool DIR [options]`. Throws InputError for a bad command.
  explicit SupervisedServe(const std::vector<std::string>& command);

  int ranks(const std::vector<supervise::HostSlots>& hosts) const override {
    return total_slots(hosts);
  }
  std::vector<std::string> command() const override {
    return supervise::supervised_serve_command(serve_);
  }
  void watch() override;
  std::optional<std::string> prepare_relaunch(const LostHosts& lost) override;
  bool under_way(supervise::RunRecoveries::Clock::time_point launched) const override;
  std::optional<std::string> plan_widening(const ReturnedHosts& returned) override;
  bool finished_since(supervise::RunRecoveries::Clock::time_point launched) const override;
  bool widen(supervise::RunRecoveries::Clock::time_point stopped_at) override;
  void ended(bool completed) override;

 private:
  // Adds the recoveries of each experiment the daemon has finished to its summary.json (those
  // that failed or were cancelled have none, and are dropped).
  void record_finished();

  supervise::ServeCommand serve_;
  // The recoveries of experiments not yet finished, by name.
  std::map<std::string, supervise::RunRecoveries> unfinished_;
  supervise::RunRecoveries::Clock::time_point next_status_read_;
  supervise::Widening widening_;  // the last one planned (plan_widening)
  int wider_ranks_ = 0;           // its ranks
  int widenings_ = 0;
};

}  // namespace mpipe::app
