// Tests for the experiment's pipeline plan and `mpipe plan`'s output: the JSON parses back with
// every stage and the predictions; the text has the stage table and advice; the optimizer sets
// the state slots; the limit's key names the problem.
#include "train/plan_report.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/byte_format.h"
#include "core/error.h"
#include "train/pipeline_plan.h"

namespace mpipe::train {
namespace {

// linear(64) → relu → linear(10) on [32] inputs; K = 2, M = 2, batch 16, Adam.
config::Experiment experiment() {
  config::Experiment e;
  e.source = "exp.yaml";
  const auto layer = [](std::string kind, int line, int64_t units) {
    model::LayerSpec spec{.kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", line, "l"}};
    if (units > 0) spec.attrs["units"] = {.value = units, .where = {"exp.yaml", line, "l.units"}};
    return spec;
  };
  e.model.layers = {layer("linear", 3, 64), layer("relu", 4, 0), layer("linear", 5, 10)};
  e.train.batch_size = 16;
  e.pipeline.stages = 2;
  e.pipeline.micro_batches = 2;
  e.refs["pipeline.memory_limit"] = {
      .file = "exp.yaml", .line = 21, .path = "pipeline.memory_limit"};
  return e;
}

const Shape kInput{32};

TEST(PipelinePlan, OptimizerSlotsFollowTheOptimizerKind) {
  optim::OptimizerConfig config;
  config.kind = optim::OptimizerKind::kAdamW;
  EXPECT_EQ(optimizer_slots(config), 2);
  config.kind = optim::OptimizerKind::kSgd;
  EXPECT_EQ(optimizer_slots(config), 0);
  config.momentum = 0.9;
  EXPECT_EQ(optimizer_slots(config), 1);
}

TEST(PipelinePlan, ErrorsNameTheExperimentsKeys) {
  config::Experiment e = experiment();
  e.pipeline.memory_limit = 1024;
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  EXPECT_TRUE(plan.problem.starts_with("exp.yaml:21: pipeline.memory_limit: ")) << plan.problem;
  e.pipeline.partition_mode = plan::PartitionMode::kManual;
  e.pipeline.partition = {1, 1};
  try {
    plan_experiment(e, model, 2, 1, 1);
    FAIL() << "no error";
  } catch (const InputError& err) {
    EXPECT_STREQ(err.what(),
                 "exp.yaml: pipeline.partition: [1, 1] sums to 2 layers, but the model has 3");
  }
}

TEST(PlanReport, JsonHasEveryStageAndThePredictions) {
  const config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  plan::PipelineConfig pipe = e.pipeline;
  const PlanReport report{.experiment = e, .model = model, .plan = plan, .pipeline = pipe};
  const nlohmann::json json = nlohmann::json::parse(plan_json(report).dump());
  EXPECT_EQ(json["config"], "exp.yaml");
  EXPECT_EQ(json["num_layers"], 3);
  EXPECT_EQ(json["num_params"], model.num_params());
  EXPECT_EQ(json["stages"], 2);
  EXPECT_EQ(json["micro_batches"], 2);
  EXPECT_EQ(json["micro_batch_rows"], 8);
  EXPECT_EQ(json["schedule"], "gpipe");
  EXPECT_EQ(json["recompute"], "always");  // what auto chooses without a memory limit
  EXPECT_EQ(json["recompute_setting"], "auto");
  EXPECT_EQ(json["partition"], "auto");
  EXPECT_TRUE(json["memory_limit_bytes"].is_null());
  ASSERT_EQ(json["layers"].size(), 3u);
  EXPECT_EQ(json["layers"][0]["kind"], "linear");
  EXPECT_EQ(json["layers"][0]["output"], nlohmann::json::array({64}));
  ASSERT_EQ(json["stage_plans"].size(), 2u);
  int64_t params = 0;
  for (size_t s = 0; s < 2; ++s) {
    const nlohmann::json& stage = json["stage_plans"][s];
    const plan::StagePlan& expected = plan.stages[s];
    EXPECT_EQ(stage["stage"], s);
    EXPECT_EQ(stage["first_layer"], expected.layers.begin);
    EXPECT_EQ(stage["last_layer"], expected.layers.end - 1);
    EXPECT_DOUBLE_EQ(stage["peak_bytes"].get<double>(), expected.memory.total());
    EXPECT_DOUBLE_EQ(stage["memory"]["optimizer_state"].get<double>(),
                     2 * stage["memory"]["params"].get<double>());
    EXPECT_DOUBLE_EQ(stage["compute_s"].get<double>(), expected.compute_s);
    EXPECT_EQ(stage["fits"], true);
    params += stage["num_params"].get<int64_t>();
  }
  EXPECT_EQ(params, model.num_params());
  EXPECT_EQ(json["stage_plans"][1]["last_layer"], 2);
  EXPECT_DOUBLE_EQ(json["step_s"].get<double>(), plan.step_s);
  EXPECT_DOUBLE_EQ(json["samples_per_s"].get<double>(), plan.samples_per_s);
  EXPECT_DOUBLE_EQ(json["bubble_fraction"].get<double>(), plan.bubble_fraction);
  EXPECT_EQ(json["fits"], true);
  EXPECT_TRUE(json["problem"].is_null());
  EXPECT_EQ(json["advice"].size(), plan.advice.size());
  EXPECT_GT(json["rates"]["flops_per_s"].get<double>(), 0.0);
  // Not calibrated: the per-product rates are unset (the forward rate stands for them).
  EXPECT_EQ(json["rates"]["weight_flops_per_s"].get<double>(), 0.0);
  EXPECT_EQ(json["rates"]["batched_weight_flops_per_s"].get<double>(), 0.0);
}

TEST(PipelinePlan, ThreadsPerRankDivideTheComputeButNotThePartition) {
  config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan one = plan_experiment(e, model, 2, 1, 1);
  const plan::PipelinePlan four = plan_experiment(e, model, 2, 1, 4);
  ASSERT_EQ(four.stages.size(), one.stages.size());
  for (size_t s = 0; s < one.stages.size(); ++s) {
    EXPECT_EQ(four.stages[s].layers.begin, one.stages[s].layers.begin);
    EXPECT_EQ(four.stages[s].layers.end, one.stages[s].layers.end);
    EXPECT_DOUBLE_EQ(four.stages[s].compute_s, one.stages[s].compute_s / 4);
    EXPECT_DOUBLE_EQ(four.stages[s].optimizer_s, one.stages[s].optimizer_s / 4);
    EXPECT_EQ(four.stages[s].forward_flops, one.stages[s].forward_flops);  // the same work
  }
  // Links do not speed up with threads: the step takes more than a quarter.
  EXPECT_LT(four.step_s, one.step_s);
  EXPECT_GT(four.step_s, one.step_s / 4);
  const PlanReport report{.experiment = e, .model = model, .plan = four, .pipeline = e.pipeline};
  EXPECT_NE(plan_text(report).find("(assumed per rank: 4 threads, 400 GFLOP/s, 16.0 GB/s of "
                                   "memory traffic, 4e+03 MB/s links; "),
            std::string::npos)
      << plan_text(report);
  EXPECT_EQ(plan_json(report)["rates"]["threads"], 4);
}

TEST(PipelinePlan, RetimedKeepsThePlanAndPredictsItsTimesAtTheMeasuredRates) {
  config::Experiment e = experiment();
  e.pipeline.memory_limit = 1 << 30;  // recompute: auto then weighs the modes by their times
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan decided = plan_experiment(e, model, 2, 1, 1);
  plan::MachineRates measured;  // twice the assumed compute rates, links as they are
  measured.flops_per_s *= 2;
  measured.bytes_per_s *= 2;
  const plan::PipelinePlan timed = retimed(e, model, decided, 1, measured);
  EXPECT_EQ(timed.rates.flops_per_s, measured.flops_per_s);
  EXPECT_EQ(timed.schedule, decided.schedule);
  EXPECT_EQ(timed.recompute, decided.recompute);
  EXPECT_EQ(timed.rank_peak_bytes, decided.rank_peak_bytes);
  EXPECT_EQ(timed.advice, decided.advice);
  ASSERT_EQ(timed.stages.size(), decided.stages.size());
  for (size_t s = 0; s < timed.stages.size(); ++s) {
    EXPECT_EQ(timed.stages[s].layers, decided.stages[s].layers);
    EXPECT_DOUBLE_EQ(timed.stages[s].compute_s, decided.stages[s].compute_s / 2);
    EXPECT_DOUBLE_EQ(timed.stages[s].optimizer_s, decided.stages[s].optimizer_s / 2);
  }
  // The step of that partition planned at the measured rates, links unchanged.
  config::Experiment pinned = e;
  pinned.pipeline.partition_mode = plan::PartitionMode::kManual;
  pinned.pipeline.partition = {decided.stages[0].layers.size(), decided.stages[1].layers.size()};
  pinned.pipeline.recompute = decided.recompute;
  pinned.pipeline.schedule = decided.schedule;
  pinned.pipeline.weight_grads = decided.weight_grads;
  const plan::PipelinePlan expected = plan_experiment(pinned, model, 2, 1, measured);
  EXPECT_DOUBLE_EQ(timed.step_s, expected.step_s);
  EXPECT_DOUBLE_EQ(timed.samples_per_s, expected.samples_per_s);
  EXPECT_DOUBLE_EQ(timed.bubble_fraction, expected.bubble_fraction);
  // ... and its timeline (what `mpipe plan --trace` draws).
  EXPECT_DOUBLE_EQ(timed.timeline.makespan, expected.timeline.makespan);
  EXPECT_LT(timed.timeline.makespan, decided.timeline.makespan);
  EXPECT_LT(timed.step_s, decided.step_s);
  EXPECT_GT(timed.step_s, decided.step_s / 2);  // the links do not speed up
}

TEST(PlanReport, SaysWhereTheRatesComeFromAndWhatTheyDoNotChoose) {
  const config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  const PlanReport measured{.experiment = e,
                            .model = model,
                            .plan = plan,
                            .pipeline = e.pipeline,
                            .rates_source = "measured in 0.12 s: linear 8 x 32 -> 64"};
  const std::string text = plan_text(measured);
  EXPECT_NE(text.find("(measured per rank: 1 thread, "), std::string::npos) << text;
  EXPECT_NE(text.find("(rates measured in 0.12 s: linear 8 x 32 -> 64; the plan is chosen as "
                      "`mpipe train` chooses it, at the assumed 100 GFLOP/s and 4.0 GB/s per "
                      "thread, "),
            std::string::npos)
      << text;
  EXPECT_EQ(plan_json(measured)["rates_source"], "measured in 0.12 s: linear 8 x 32 -> 64");
  const PlanReport assumed{.experiment = e,
                           .model = model,
                           .plan = plan,
                           .pipeline = e.pipeline,
                           .rates_source = "assumed"};
  EXPECT_EQ(plan_text(assumed).find("(rates "), std::string::npos);
  EXPECT_EQ(plan_json(assumed)["rates_source"], "assumed");
}

TEST(PlanReport, SlowerLinksLengthenTheStepByTheirQueuedTransfers) {
  const config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  plan::MachineRates fast, slow;
  slow.link_bytes_per_s = 12.5e6;  // 100mbit
  const plan::PipelinePlan a = plan_experiment(e, model, 2, 1, fast);
  const plan::PipelinePlan b = plan_experiment(e, model, 2, 1, slow);
  EXPECT_GT(b.step_s, a.step_s);
  const PlanReport report{.experiment = e, .model = model, .plan = b, .pipeline = e.pipeline};
  EXPECT_NE(plan_text(report).find("12.5 MB/s links"), std::string::npos) << plan_text(report);
}

TEST(PlanReport, TheReplicasAllreduceIsAReduceScatterThenAnAllgather) {
  // On a link so slow that the allreduce is the whole step: each rank sends (D - 1) / D of the
  // gradient in each half, so D = 2 moves it once and D = 4 one and a half times; under
  // weight_grads: tree, D = 4 is two levels of D = 2.
  config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  plan::MachineRates slow;
  slow.link_bytes_per_s = 1.0;
  const plan::PipelinePlan d2 = plan_experiment(e, model, 1, 2, slow);
  const plan::PipelinePlan d4 = plan_experiment(e, model, 1, 4, slow);
  e.pipeline.weight_grads = plan::WeightGrads::kTree;
  const plan::PipelinePlan d4_tree = plan_experiment(e, model, 1, 4, slow);
  const double gradient_bytes = d2.stages[0].memory.params;
  EXPECT_NEAR(d2.step_s / gradient_bytes, 1.0, 1e-3);
  EXPECT_NEAR(d4.step_s / (1.5 * gradient_bytes), 1.0, 1e-3);
  EXPECT_NEAR(d4_tree.step_s / (2 * gradient_bytes), 1.0, 1e-3);
}

TEST(PlanReport, TheReplicasAllreduceRunsBehindTheLastBackward) {
  // On a link whose allreduce takes a third of the step, each layer's gradient leaves once its
  // part of the last backward is done (the second linear's before the first's backward): the
  // step grows by less than the transfer, yet the link's time still bounds it from below.
  // (Accumulating: weight_grads: auto's group product would finish every gradient at once.)
  config::Experiment e = experiment();
  e.pipeline.stages = 1;
  e.pipeline.weight_grads = plan::WeightGrads::kAccumulate;
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  plan::MachineRates fast;
  fast.link_bytes_per_s = 1e18;
  const plan::PipelinePlan unlimited = plan_experiment(e, model, 1, 2, fast);
  const double gradient_bytes = unlimited.stages[0].memory.params;
  plan::MachineRates slow = fast;
  slow.link_bytes_per_s = gradient_bytes / (unlimited.step_s / 3);
  const plan::PipelinePlan limited = plan_experiment(e, model, 1, 2, slow);
  const double transfer = unlimited.step_s / 3;
  EXPECT_GT(limited.step_s, unlimited.step_s);
  EXPECT_LT(limited.step_s, unlimited.step_s + 0.9 * transfer);
  EXPECT_GT(limited.step_s, transfer);
}

TEST(PlanReport, JsonNamesTheProblemWhenOverTheLimit) {
  config::Experiment e = experiment();
  e.pipeline.memory_limit = 4096;
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  const PlanReport report{.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline};
  const nlohmann::json json = nlohmann::json::parse(plan_json(report).dump());
  EXPECT_EQ(json["fits"], false);
  EXPECT_EQ(json["memory_limit_bytes"], 4096);
  EXPECT_EQ(json["problem"], plan.problem);
  EXPECT_NE(plan_text(report).find("does not fit: " + plan.problem + "\n"), std::string::npos);
}

TEST(PlanReport, SaysWhenMeasuredTimeReplacesThePartition) {
  config::Experiment e = experiment();
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  EXPECT_EQ(plan_json({.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline})
                .at("balance"),
            "predicted");
  e.pipeline.balance = plan::Balance::kMeasured;
  e.pipeline.balance_after = 5;
  const PlanReport report{.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline};
  EXPECT_EQ(plan_json(report).at("balance"), "measured");
  EXPECT_NE(plan_text(report).find("partition: auto (then by measured time after 5 steps), "),
            std::string::npos)
      << plan_text(report);
}

TEST(PlanReport, TextHasTheLayerAndStageTablesAndAdvice) {
  config::Experiment e = experiment();
  e.train.batch_size = 4096;  // enough compute that more micro-batches are predicted faster
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  const std::string text =
      plan_text({.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline});
  EXPECT_TRUE(text.starts_with(
      "exp.yaml: 3 layers, 2762 parameters; 2 stages x 1 replica, 2 micro-batches of 2048 "
      "examples, "
      "gpipe, recompute: always (auto), weight gradients: accumulate, partition: auto, memory "
      "limit: "
      "none\n"))
      << text;
  EXPECT_NE(text.find("stage  layers         params  GFLOP/step  time/step peak memory"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(format_bytes(plan.stages[1].memory.total())), std::string::npos);
  EXPECT_NE(text.find("predicted step "), std::string::npos);
  EXPECT_NE(text.find(" samples/s | bubble "), std::string::npos);
  EXPECT_NE(text.find("advice: raise pipeline.micro_batches to >= 4 x stages = 8"),
            std::string::npos)
      << text;
}

// linear(64, saves h) relu linear(64) add(h) linear(10), K = 2 cut after the relu: the cut carries
// the main stream and h; a chain's plan shows no cut table.
TEST(PlanReport, EachCutListsItsLiveSetAndBytes) {
  config::Experiment e = experiment();
  EXPECT_EQ(plan_text({.experiment = e,
                       .model = model::plan_model(e.model, kInput),
                       .plan = plan_experiment(e, model::plan_model(e.model, kInput), 2, 1, 1),
                       .pipeline = e.pipeline})
                .find("live set"),
            std::string::npos);
  e.model.layers[0].save = model::ValueRef{"h", {"exp.yaml", 3, "l.save"}};
  model::LayerSpec linear = e.model.layers[0];
  linear.save.reset();
  model::LayerSpec add{.kind = "add", .attrs = {}, .where = {"exp.yaml", 6, "l"}};
  add.reads = {model::ValueRef{"h", {"exp.yaml", 6, "l.read[0]"}}};
  e.model.layers.insert(e.model.layers.begin() + 2, {linear, add});
  e.pipeline.partition = {2, 3};
  e.pipeline.partition_mode = plan::PartitionMode::kManual;
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
  const PlanReport report{.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline};
  const std::string text = plan_text(report);
  EXPECT_NE(text.find("1|2             512          512  layers.1 [64], h [64]"), std::string::npos)
      << text;
  const nlohmann::json json = nlohmann::json::parse(plan_json(report).dump());
  ASSERT_EQ(json["cuts"].size(), 1u);
  EXPECT_EQ(json["cuts"][0]["before_layer"], 2);
  EXPECT_EQ(json["cuts"][0]["bytes_per_example"], 2 * 64 * 4);
  ASSERT_EQ(json["cuts"][0]["live"].size(), 2u);
  EXPECT_EQ(json["cuts"][0]["live"][1]["name"], "h");
  EXPECT_EQ(json["cuts"][0]["live"][1]["needs_grad"], true);
}

// With chunks the rank table lists each rank's stages as the schedule places them: rank r holds
// stages r and r + K under interleaved, r and 2K-1-r under zbv's V.
TEST(PlanReport, TheRankTableFollowsTheSchedulesPlacement) {
  config::Experiment e = experiment();
  const std::vector<model::LayerSpec> first_two(e.model.layers.begin(), e.model.layers.begin() + 2);
  // linear(64) relu linear(64) relu linear(10)
  e.model.layers.insert(e.model.layers.begin() + 2, first_two.begin(), first_two.end());
  e.pipeline.virtual_stages = 2;
  e.pipeline.micro_batches = 2;
  const model::ModelPlan model = model::plan_model(e.model, kInput);
  const auto rank_rows = [&](plan::ScheduleKind schedule) {
    e.pipeline.schedule = schedule;
    const plan::PipelinePlan plan = plan_experiment(e, model, 2, 1, 1);
    const std::string text =
        plan_text({.experiment = e, .model = model, .plan = plan, .pipeline = e.pipeline});
    const size_t table = text.find("rank   stages");
    EXPECT_NE(table, std::string::npos) << text;
    const size_t first = text.find('\n', table) + 1;
    const size_t second = text.find('\n', first) + 1;
    return std::pair{text.substr(first, 15), text.substr(second, 15)};
  };
  EXPECT_EQ(rank_rows(plan::ScheduleKind::kInterleaved),
            (std::pair<std::string, std::string>{"0      0, 2    ", "1      1, 3    "}));
  EXPECT_EQ(rank_rows(plan::ScheduleKind::kZbv),
            (std::pair<std::string, std::string>{"0      0, 3    ", "1      1, 2    "}));
}

}  // namespace
}  // namespace mpipe::train
