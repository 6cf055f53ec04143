// Tests for the world-independent side of preflight: how the daemon plans an experiment for any
// world, and what `mpipe submit` can refuse before the experiment runs.
#include "job/preflight.h"

#include <gtest/gtest.h>

#include <fstream>

#include "config/experiment.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::job {
namespace {

const std::string kMlp =
    "model:\n"
    "  layers:\n"
    "    - {type: linear, units: 8}\n"
    "    - {type: relu}\n"
    "    - {type: linear, units: 4}\n"
    "data: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\n"
    "train: {steps: 2, batch_size: 16}\n";

class Planned {
 public:
  // The pipeline of kMlp + `pipeline` after plan_for_any_world for `world_size` ranks (0: at
  // submit).
  plan::PipelineConfig operator()(const std::string& pipeline,
                                  const std::vector<std::string>& overrides = {},
                                  int world_size = 0) {
    config::Experiment experiment = load(pipeline, overrides);
    plan_for_any_world(experiment, world_size);
    return experiment.pipeline;
  }

  // The InputError of planning it for `world_size` ranks, its folder removed.
  std::string error(const std::string& pipeline, int world_size) {
    config::Experiment experiment = load(pipeline, {});
    try {
      plan_for_any_world(experiment, world_size);
    } catch (const InputError& e) {
      return std::string(e.what()).substr(dir_.path().string().size() + 1);
    }
    return "(no error)";
  }

 private:
  config::Experiment load(const std::string& pipeline, const std::vector<std::string>& overrides) {
    const std::string path = dir_.file("exp.yaml");
    std::ofstream(path) << kMlp << pipeline;
    return config::load_experiment(path, overrides);
  }

 private:
  testing::TempDir dir_;
};

TEST(PlanForAnyWorld, WithoutPipelineKeysStagesFillTheWorld) {
  Planned planned;
  const auto pipeline = planned("");
  EXPECT_EQ(pipeline.stages, 0);  // auto
  EXPECT_EQ(pipeline.data_parallel, 1);
}

TEST(PlanForAnyWorld, FixedStagesMakeDataParallelAuto) {
  Planned planned;
  EXPECT_EQ(planned("pipeline: {stages: 3}\n").data_parallel, 0);
  EXPECT_EQ(planned("", {"pipeline.stages=3"}).data_parallel, 0);
  EXPECT_EQ(planned("", {"pipeline.stages=3"}).stages, 3);
}

TEST(PlanForAnyWorld, DataParallelReplicasShareTheMicroBatchesSoTheirSizeIsKept) {
  Planned planned;
  auto pipeline = planned("pipeline: {stages: 2, micro_batches: 4}\n", {}, 4);
  EXPECT_EQ(pipeline.stages, 2);
  EXPECT_EQ(pipeline.data_parallel, 2);
  EXPECT_EQ(pipeline.micro_batches, 2);  // 2 replicas x 2 micro-batches of 16 / 4 examples
  pipeline = planned("pipeline: {stages: 1, micro_batches: 4}\n", {}, 4);
  EXPECT_EQ(pipeline.data_parallel, 4);
  EXPECT_EQ(pipeline.micro_batches, 1);
  pipeline = planned("pipeline: {stages: 2, micro_batches: 4}\n", {}, 2);
  EXPECT_EQ(pipeline.data_parallel, 1);
  EXPECT_EQ(pipeline.micro_batches, 4);
  pipeline = planned("pipeline: {stages: 2, data_parallel: auto}\n", {}, 4);  // asked for
  EXPECT_EQ(pipeline.data_parallel, 0);
  EXPECT_EQ(pipeline.micro_batches, 1);
  pipeline = planned("pipeline: {stages: 3}\n", {}, 4);  // resolve_topology refuses the world
  EXPECT_EQ(pipeline.data_parallel, 0);
}

TEST(PlanForAnyWorld, MicroBatchesTheReplicasCannotShareAreRefused) {
  Planned planned;
  EXPECT_EQ(planned.error("pipeline: {stages: 2}\n", 4),
            "exp.yaml: pipeline.micro_batches: 1 micro-batch of 16 examples cannot be shared by "
            "the 2 data-parallel replicas of 2 stages on 4 ranks without changing their size; "
            "set pipeline.micro_batches to a multiple of 2, or pipeline.data_parallel");
  EXPECT_EQ(planned.error("pipeline: {stages: 1,\n  micro_batches: 2}\n", 4),
            "exp.yaml:9: pipeline.micro_batches: 2 micro-batches of 8 examples cannot be shared "
            "by the 4 data-parallel replicas of 1 stage on 4 ranks without changing their size; "
            "set pipeline.micro_batches to a multiple of 4, or pipeline.data_parallel");
}

TEST(PlanForAnyWorld, FixedDataParallelMakesStagesAuto) {
  Planned planned;
  const auto pipeline = planned("pipeline: {data_parallel: 2}\n");
  EXPECT_EQ(pipeline.stages, 0);
  EXPECT_EQ(pipeline.data_parallel, 2);
}

TEST(PlanForAnyWorld, WhatTheExperimentFixesIsKept) {
  Planned planned;
  auto pipeline = planned("pipeline: {stages: 2, data_parallel: 1}\n");
  EXPECT_EQ(pipeline.stages, 2);
  EXPECT_EQ(pipeline.data_parallel, 1);
  pipeline = planned("pipeline: {stages: auto}\n");
  EXPECT_EQ(pipeline.stages, 0);
  EXPECT_EQ(pipeline.data_parallel, 1);
  pipeline = planned("pipeline: {data_parallel: auto}\n");  // both auto is not a plan
  EXPECT_EQ(pipeline.stages, 1);
  EXPECT_EQ(pipeline.data_parallel, 0);
}

class SubmitCheck : public ::testing::Test {
 protected:
  // The InputError of checking kMlp + `extra`, with the folder removed; "(no error)" if none.
  std::string error(const std::string& extra, const std::vector<std::string>& overrides = {}) {
    const std::string path = dir_.file("exp.yaml");
    std::ofstream(path) << kMlp << extra;
    try {
      check_experiment_for_any_world(path, overrides);
    } catch (const InputError& e) {
      std::string message = e.what();
      const std::string folder = dir_.path().string() + "/";
      if (message.starts_with(folder)) message.erase(0, folder.size());
      return message;
    }
    return "(no error)";
  }

  testing::TempDir dir_;
};

TEST_F(SubmitCheck, AValidExperimentPassesWhateverTheWorld) {
  EXPECT_EQ(error(""), "(no error)");
  EXPECT_EQ(error("pipeline: {stages: 3}\n"), "(no error)");  // the world must be 3, 6, ...
}

TEST_F(SubmitCheck, ConfigErrorsAreTheLinesTrainPrints) {
  EXPECT_EQ(error("optimizer: {lr: -1}\n"), "exp.yaml:8: optimizer.lr: must be > 0, got -1");
  EXPECT_EQ(error("", {"pipeline.micro_batches=0"}),
            "--set pipeline.micro_batches: must be >= 1, got 0");
}

TEST_F(SubmitCheck, FixedStagesAreCheckedAgainstTheModel) {
  EXPECT_EQ(error("pipeline: {stages: 4}\n"),
            "exp.yaml: pipeline.partition: the model has 3 layers, fewer than the 4 pipeline "
            "stages");
  EXPECT_EQ(error("pipeline: {stages: 2, partition: [1, 1]}\n"),
            "exp.yaml:8: pipeline.partition: [1, 1] sums to 2 layers, but the model has 3");
}

TEST_F(SubmitCheck, SizesThatCannotFitAnyWorldAreRefused) {
  EXPECT_TRUE(error("", {"model.layers=[{type: linear, units: 100000000000}]"})
                  .starts_with("--set model.layers[0] (linear): needs "));
  EXPECT_TRUE(error("", {"data.num_examples=100000000000"})
                  .starts_with("--set data.num_examples: the dataset needs "));
}

// train.precision: bf16 on a CPU without AVX512-BF16 is refused with one line naming the key
// (file:line); f32 runs anywhere, bf16 where the flag is listed.
TEST(PrecisionProblem, Bf16WithoutTheCpuFlagNamesTheKeyAndItsLine) {
  testing::TempDir dir;
  const std::string path = dir.file("exp.yaml");
  std::ofstream(path) << "model:\n"
                         "  layers:\n"
                         "    - {type: linear, units: 4}\n"
                         "data: {dataset: synthetic, num_examples: 64, features: 8, classes: 4}\n"
                         "train:\n"
                         "  steps: 2\n"
                         "  precision: bf16\n";
  const std::string no_bf16 = "flags\t\t: fpu avx2 avx512f avx512_vnni\n";
  const std::string bf16 = "flags\t\t: fpu avx512f avx512_bf16 amx_bf16\n";
  const config::Experiment experiment = config::load_experiment(path, {});
  EXPECT_EQ(precision_problem(experiment, no_bf16),
            path +
                ":7: train.precision: bf16 needs a CPU with the avx512_bf16 flag, which "
                "/proc/cpuinfo does not list; use f32");
  EXPECT_EQ(precision_problem(experiment, bf16), std::nullopt);
  EXPECT_EQ(precision_problem(config::load_experiment(path, {"train.precision=f32"}), no_bf16),
            std::nullopt);
}

// comm.progress_thread: true with an MPI library that provides less than MPI_THREAD_MULTIPLE is
// refused with one line naming the key (file:line, or --set); false runs with any level.
TEST(ProgressThreadProblem, WithoutThreadMultipleNamesTheKeyAndItsLine) {
  testing::TempDir dir;
  const std::string path = dir.file("exp.yaml");
  std::ofstream(path) << kMlp << "comm:\n  progress_thread: true\n";
  const config::Experiment experiment = config::load_experiment(path, {});
  EXPECT_EQ(progress_thread_problem(experiment, comm::ThreadLevel::kFunneled),
            path +
                ":9: comm.progress_thread: true needs MPI_THREAD_MULTIPLE, but this MPI library "
                "provides only MPI_THREAD_FUNNELED; set it to false");
  EXPECT_EQ(progress_thread_problem(experiment, comm::ThreadLevel::kMultiple), std::nullopt);
  const config::Experiment set =
      config::load_experiment(path, {"comm.progress_thread=false", "comm.progress_thread=true"});
  EXPECT_EQ(progress_thread_problem(set, comm::ThreadLevel::kSerialized),
            "--set comm.progress_thread: true needs MPI_THREAD_MULTIPLE, but this MPI library "
            "provides only MPI_THREAD_SERIALIZED; set it to false");
  EXPECT_EQ(progress_thread_problem(config::load_experiment(path, {"comm.progress_thread=false"}),
                                    comm::ThreadLevel::kFunneled),
            std::nullopt);
}

}  // namespace
}  // namespace mpipe::job
