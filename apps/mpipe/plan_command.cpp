// `mpipe plan`: predicts an experiment's pipeline plan, its step time and memory (one process,
// no MPI, no training).
#include "plan_command.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "checkpoint/atomic_file.h"
#include "config/byte_size.h"
#include "config/experiment.h"
#include "config/link_rate.h"
#include "core/error.h"
#include "data/dataset.h"
#include "model/model_builder.h"
#include "option_checks.h"
#include "plan/batch_split.h"
#include "plan/weight_groups.h"
#include "train/data_contract.h"
#include "train/pipeline_plan.h"
#include "train/plan_calibration.h"
#include "train/plan_report.h"
#include "train/plan_trace.h"
#include "train/virtual_stage_rules.h"

namespace mpipe::app {
namespace {

// mpipe plan's exit code when the plan does not fit the memory limit (the plan is printed all the
// same): distinct from bad input (2) and from a run over the limit (4).
constexpr int kPlanDoesNotFitExitCode = 5;

}  // namespace

PlanCommand::PlanCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "plan",
      "Predict each stage's layers, time and peak memory, the bubble, the step time and "
      "samples/s (no MPI, no training)");
  app_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  app_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  app_->add_option("--stages", stages_,
                   "Pipeline stages K (default: from the config; a manual partition becomes auto)")
      ->check(unnamed(CLI::Range(1, 1 << 20)));
  app_->add_option("--micro-batches", micro_batches_, "Micro-batches M (default: from the config)")
      ->check(unnamed(CLI::Range(1, 1 << 20)));
  app_->add_option("--memory-limit", memory_limit_,
                   "Predicted peak bytes allowed per rank, e.g. 6GiB, 512MiB, 2G, or none "
                   "(default: pipeline.memory_limit)");
  app_->add_option("--threads-per-rank", threads_,
                   "OpenMP threads each rank computes on (default: this process's, "
                   "OMP_NUM_THREADS or its cores, as a rank started the same way would have)")
      ->check(unnamed(CLI::Range(1, 1 << 16)));
  app_->add_option("--link-bandwidth", link_bandwidth_,
                   "The rate of the links between ranks, e.g. 100mbit, 1gbit or 125MB (per "
                   "second; default: shared memory's, 4 GB/s)");
  app_->add_flag("--calibrate", calibrate_,
                 "Measure this machine's rates longer (0.1 s a product, a rank's whole share of "
                 "the parameters) than the default brief measurement");
  app_->add_flag("--assumed-rates", assumed_rates_,
                 "Predict at the fixed rates the plan is chosen at (the development machine's "
                 "100 GFLOP/s and 4 GB/s per thread) instead of measuring this machine's GEMM "
                 "rate (oneDNN matmuls of the model's main linear shape at the micro-batch's "
                 "rows, else of 1024^3) and memory traffic (a ReLU over that product's output, the "
                 "optimizer step over a rank's parameters); the same output on every machine")
      ->excludes("--calibrate");
  app_->add_flag("--json", json_, "Print the plan as one JSON object");
  app_->add_option("--trace", trace_path_,
                   "Write the predicted step's timeline to this file, in the format of a run's "
                   "trace.json (scripts/plot_timeline.py draws it)")
      ->check(kNotEmpty)
      ->type_name("FILE");
}

int PlanCommand::run() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  plan::PipelineConfig& pipe = experiment.pipeline;
  if (app_->count("--stages")) {
    pipe.stages = stages_;
    if (pipe.partition_mode == plan::PartitionMode::kManual) {
      pipe.partition_mode = plan::PartitionMode::kAuto;
    }
  }
  pipe.stages = std::max(1, pipe.stages);                // `auto` without a world: 1
  pipe.data_parallel = std::max(1, pipe.data_parallel);  // likewise
  if (app_->count("--micro-batches")) pipe.micro_batches = micro_batches_;
  if (app_->count("--memory-limit")) {
    try {
      pipe.memory_limit = memory_limit_ == "none" ? 0 : config::parse_byte_size(memory_limit_);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--memory-limit: {}", e.what()));
    }
    experiment.refs["pipeline.memory_limit"] = {
        .file = "--memory-limit", .line = 0, .path = memory_limit_};
  }
  plan::check_batch_split(experiment.train.batch_size, pipe.micro_batches, pipe.data_parallel,
                          experiment.where("train.batch_size"));
  auto dataset = data::make_dataset(experiment.data, experiment.train.seed);
  const model::ModelPlan model = model::plan_model(experiment.model, train::model_inputs(*dataset));
  train::check_model_fits_data(experiment.model, model, dataset->schema());
  train::check_virtual_stages(experiment, pipe.stages);
  plan::MachineRates rates;
  rates.threads = app_->count("--threads-per-rank") ? threads_ : omp_get_max_threads();
  if (app_->count("--link-bandwidth")) {
    try {
      rates.link_bytes_per_s = config::parse_link_rate(link_bandwidth_);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--link-bandwidth: {}", e.what()));
    }
  }
  // The plan is chosen at the assumed rates, as every rank of `mpipe train` chooses it, and
  // predicted at this machine's (docs/design/planner.md, "Measured rates").
  plan::PipelinePlan plan =
      train::plan_experiment(experiment, model, pipe.stages, pipe.data_parallel, rates);
  std::string rates_source = "assumed";
  if (!assumed_rates_) {
    const train::MachineCalibration measured = train::calibrate_machine(
        model, experiment.optimizer,
        experiment.train.batch_size / (pipe.data_parallel * pipe.micro_batches),
        plan::weight_groups(plan.weight_grads, pipe.micro_batches, plan.weight_group).size,
        pipe.stages, rates, calibrate_ ? train::Calibration::kFull : train::Calibration::kQuick);
    plan = train::retimed(experiment, model, plan, pipe.data_parallel, measured.rates);
    const std::string elementwise = measured.elementwise_measured.empty()
                                        ? std::string()
                                        : "; element-wise: " + measured.elementwise_measured;
    rates_source =
        fmt::format("measured in {:.2f} s{}: {}{}", measured.seconds,
                    calibrate_ ? " (--calibrate)" : "", measured.gemm.measured, elementwise);
    if (!json_) {
      const std::string copies =
          measured.gemm.weight_copies > 0
              ? fmt::format(", through {} copies of its weight", measured.gemm.weight_copies)
              : "";
      std::printf(
          "measured (%s%s, %d thread(s), %.2f s%s), GFLOP/s per rank: forward %.1f, input gradient "
          "%.1f, weight gradient %.1f, deferred over a group's rows %.1f; memory traffic %.1f "
          "GB/s (the optimizer step)%s\n",
          measured.gemm.measured.c_str(), copies.c_str(), rates.threads, measured.seconds,
          calibrate_ ? ", --calibrate" : "", measured.gemm.flops_per_s / 1e9,
          measured.gemm.input_gradient_flops_per_s / 1e9, measured.gemm.weight_flops_per_s / 1e9,
          measured.gemm.batched_weight_flops_per_s / 1e9, measured.memory_bytes_per_s / 1e9,
          measured.elementwise_measured.empty()
              ? ""
              : fmt::format(", {:.1f} GB/s (element-wise, {})",
                            measured.elementwise_bytes_per_s / 1e9, measured.elementwise_measured)
                    .c_str());
    }
  }
  if (app_->count("--trace")) {
    // Written whole or not at all (a temporary file renamed into place), before the report.
    const std::string trace = train::plan_trace(plan).dump() + "\n";
    try {
      checkpoint::write_file_atomically(trace_path_, trace);
    } catch (const Error& e) {
      throw InputError(fmt::format("--trace: {}", e.what()));
    }
  }
  const train::PlanReport report{.experiment = experiment,
                                 .model = model,
                                 .plan = plan,
                                 .pipeline = pipe,
                                 .rates_source = rates_source};
  if (json_) {
    std::printf("%s\n", train::plan_json(report).dump(2).c_str());
  } else {
    std::fputs(train::plan_text(report).c_str(), stdout);
  }
  return plan.fits() ? 0 : kPlanDoesNotFitExitCode;
}

}  // namespace mpipe::app
