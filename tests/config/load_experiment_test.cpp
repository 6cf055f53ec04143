// Tests for load_experiment: a full file, defaults, and file-level errors.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "config/experiment.h"
#include "experiment_file.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::config {
namespace {

TEST(LoadExperiment, FullFileParsesEveryKeyIntoTheModuleStructs) {
  const std::string path = std::string(MPIPE_TEST_DATA_DIR) + "/full.yaml";
  const Experiment e = load_experiment(path, {});
  EXPECT_EQ(e.source, path);

  EXPECT_EQ(e.model.loss, "mse");
  ASSERT_EQ(e.model.layers.size(), 2u);
  EXPECT_EQ(e.model.layers[0].kind, "linear");
  EXPECT_EQ(std::get<int64_t>(e.model.layers[0].attrs.at("units").value), 256);
  EXPECT_EQ(e.model.layers[1].kind, "relu");
  EXPECT_EQ(e.model.where.path, "model");
  EXPECT_EQ(e.model.where.line, 3);

  EXPECT_EQ(e.data.kind, data::DatasetKind::kSynthetic);
  EXPECT_EQ(e.data.path, "/tmp/data");
  EXPECT_FALSE(e.data.flatten);
  EXPECT_FALSE(e.data.normalize);
  EXPECT_EQ(e.data.augment_crop_padding, 4);
  EXPECT_TRUE(e.data.augment_flip);
  EXPECT_EQ(e.data.num_examples, 1000);
  EXPECT_EQ(e.data.features, 32);
  EXPECT_EQ(e.data.classes, 0);
  EXPECT_EQ(e.data.seq_len, 16);
  EXPECT_DOUBLE_EQ(e.data.val_fraction, 0.25);
  EXPECT_EQ(e.data.vocab, 100);
  EXPECT_TRUE(e.data.tokens);

  EXPECT_EQ(e.train.steps, 500);
  EXPECT_EQ(e.train.batch_size, 96);
  EXPECT_EQ(e.train.seed, 18446744073709551615ull);
  EXPECT_EQ(e.train.eval_every, 50);
  EXPECT_EQ(e.train.eval_batches, 4);
  EXPECT_EQ(e.train.eval_batch_size, 32);
  EXPECT_EQ(e.train.eval_bleu_sentences, 50);

  EXPECT_EQ(e.optimizer.kind, optim::OptimizerKind::kSgd);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.05);
  EXPECT_DOUBLE_EQ(e.optimizer.momentum, 0.9);
  EXPECT_TRUE(e.optimizer.nesterov);
  EXPECT_DOUBLE_EQ(e.optimizer.weight_decay, 1e-4);
  EXPECT_DOUBLE_EQ(e.optimizer.beta1, 0.8);
  EXPECT_DOUBLE_EQ(e.optimizer.beta2, 0.99);
  EXPECT_DOUBLE_EQ(e.optimizer.eps, 1e-6);
  EXPECT_DOUBLE_EQ(e.optimizer.clip_norm, 1.5);
  EXPECT_TRUE(e.optimizer.shard_across_replicas);
  EXPECT_EQ(e.optimizer.schedule.kind, optim::LrScheduleKind::kCosine);
  EXPECT_EQ(e.optimizer.schedule.warmup_steps, 10);
  EXPECT_EQ(e.optimizer.schedule.step_size, 20);
  EXPECT_DOUBLE_EQ(e.optimizer.schedule.gamma, 0.5);
  EXPECT_DOUBLE_EQ(e.optimizer.schedule.min_lr, 0.001);
  EXPECT_EQ(e.optimizer.schedule.decay_steps, 30);
  EXPECT_DOUBLE_EQ(e.optimizer.schedule.decay_fraction, 0.1);
  EXPECT_EQ(e.optimizer.schedule.total_steps, 400);

  EXPECT_EQ(e.pipeline.stages, 2);
  EXPECT_EQ(e.pipeline.data_parallel, 3);
  EXPECT_EQ(e.pipeline.micro_batches, 4);
  EXPECT_EQ(e.pipeline.virtual_stages, 1);
  EXPECT_EQ(e.pipeline.schedule, plan::ScheduleKind::kOneFOneB);
  EXPECT_EQ(e.pipeline.recompute, plan::Recompute::kExceptLast);
  EXPECT_EQ(e.pipeline.weight_grads, plan::WeightGrads::kBatched);
  EXPECT_EQ(e.pipeline.partition, (std::vector<int>{1, 1}));
  EXPECT_EQ(e.pipeline.memory_limit, int64_t{3} << 30);

  EXPECT_EQ(e.checkpoint.every, 100);
  EXPECT_EQ(e.checkpoint.keep, 5);
  EXPECT_TRUE(e.checkpoint.peer_copy);
  EXPECT_EQ(e.log.every, 25);
  EXPECT_EQ(e.log.level, "debug");
}

TEST(LoadExperiment, MissingSectionsTakeTheStructDefaults) {
  ExperimentFile file;
  const Experiment e = file.load(kModel);
  EXPECT_EQ(e.model.loss, "cross_entropy");
  EXPECT_EQ(e.train.steps, train::TrainConfig{}.steps);
  EXPECT_EQ(e.train.batch_size, train::TrainConfig{}.batch_size);
  EXPECT_EQ(e.optimizer.kind, optim::OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, optim::OptimizerConfig{}.lr);
  EXPECT_EQ(e.pipeline.stages, 1);
  EXPECT_TRUE(e.pipeline.partition.empty());
  EXPECT_EQ(e.pipeline.partition_mode, plan::PartitionMode::kAuto);
  EXPECT_EQ(e.pipeline.memory_limit, 0);
  EXPECT_EQ(e.data.kind, data::DatasetKind::kFashionMnist);
  EXPECT_EQ(e.checkpoint.keep, 3);
  EXPECT_FALSE(e.checkpoint.peer_copy);
  EXPECT_EQ(e.log.level, "info");
}

TEST(LoadExperiment, EmptySectionsTakeTheStructDefaults) {
  ExperimentFile file;
  const Experiment e = file.load("train:\noptimizer:\n  schedule:\n" + kModel);
  EXPECT_EQ(e.train.steps, train::TrainConfig{}.steps);
  EXPECT_EQ(e.optimizer.schedule.kind, optim::LrScheduleKind::kConstant);
}

TEST(LoadExperiment, PartitionUniformAndAutoCountsMapToUniformModeAndZero) {
  ExperimentFile file;
  const Experiment e =
      file.load("pipeline:\n  stages: auto\n  data_parallel: 2\n  partition: uniform\n" + kModel);
  EXPECT_EQ(e.pipeline.stages, 0);
  EXPECT_EQ(e.pipeline.data_parallel, 2);
  EXPECT_TRUE(e.pipeline.partition.empty());
  EXPECT_EQ(e.pipeline.partition_mode, plan::PartitionMode::kUniform);
}

TEST(LoadExperiment, MissingFileIsReportedWithItsName) {
  try {
    load_experiment("/nonexistent/exp.yaml", {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/exp.yaml: cannot open: No such file or directory");
  }
}

TEST(LoadExperiment, FifoIsRefusedWithoutWaitingForAWriter) {
  // Opening a FIFO for reading blocks until a writer comes: on old code the test hangs (until
  // ctest's timeout).
  const testing::TempDir dir;
  const std::string fifo = dir.file("exp.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(testing::input_error_of([&] { load_experiment(fifo, {}); }),
            fifo + ": an experiment file must be a regular file");
}

TEST(LoadExperiment, CharacterDeviceIsRefusedBeforeItIsRead) {
  // /dev/zero never ends: old code read it until memory ran out.
  EXPECT_EQ(testing::input_error_of([] { load_comm_section("/dev/zero", {}); }),
            "/dev/zero: an experiment file must be a regular file");
}

TEST(LoadExperiment, DirectoryIsNotAnExperimentFile) {
  const std::string dir = std::string(MPIPE_TEST_DATA_DIR);
  try {
    load_experiment(dir, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory, not an experiment file");
  }
}

TEST(LoadExperiment, YamlSyntaxErrorNamesLineAndYamlCppMessage) {
  ExperimentFile file;
  EXPECT_EQ(file.error("train:\n  steps: [1, 2\n  seed: 3\n"),
            "exp.yaml:3: invalid YAML: end of sequence flow not found");
}

TEST(LoadExperiment, RootThatIsNotAMapIsRejected) {
  ExperimentFile file;
  EXPECT_EQ(file.error("- a\n- b\n"), "exp.yaml:1: expected a map of sections, got a list");
}

TEST(LoadExperiment, UnknownSectionListsTheKnownOnes) {
  ExperimentFile file;
  EXPECT_EQ(file.error(kModel + "trainer:\n  steps: 3\n"),
            "exp.yaml:4: trainer: unknown key (known: model, data, train, optimizer, pipeline, "
            "checkpoint, log, comm)");
}

TEST(LoadExperiment, EmptyFileLacksTheRequiredLayers) {
  ExperimentFile file;
  EXPECT_EQ(file.error(""), "exp.yaml: model.layers: required key is missing");
}

TEST(LoadExperiment, DuplicateKeyNamesBothLines) {
  ExperimentFile file;
  EXPECT_EQ(file.error("train:\n  steps: 3\n  steps: 4\n" + kModel),
            "exp.yaml:3: train.steps: duplicate key (first at line 2)");
}

}  // namespace
}  // namespace mpipe::config
