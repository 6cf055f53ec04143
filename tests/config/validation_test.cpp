// Tests for the value rules of every section: one small bad file per rule, exact message.
#include <gtest/gtest.h>

#include "experiment_file.h"

namespace mpipe::config {
namespace {

// The error of a file holding `yaml` (lines from 1) followed by a valid model section.
std::string error_of(const std::string& yaml) { return ExperimentFile().error(yaml + kModel); }

// train

TEST(TrainSection, StepsMustBeNonNegative) {
  EXPECT_EQ(error_of("train:\n  steps: -1\n"), "exp.yaml:2: train.steps: must be >= 0, got -1");
}

TEST(TrainSection, ZeroStepsIsAllowed) {
  EXPECT_EQ(ExperimentFile().load("train:\n  steps: 0\n" + kModel).train.steps, 0);
}

TEST(TrainSection, OnNonFiniteIsStopOrSkip) {
  EXPECT_EQ(error_of("train:\n  on_nonfinite: ignore\n"),
            "exp.yaml:2: train.on_nonfinite: expected one of stop, skip, got 'ignore'");
  EXPECT_EQ(error_of("train:\n  max_skips_in_a_row: 0\n"),
            "exp.yaml:2: train.max_skips_in_a_row: must be >= 1, got 0");
  const Experiment experiment =
      ExperimentFile().load("train:\n  on_nonfinite: skip\n  max_skips_in_a_row: 3\n" + kModel);
  EXPECT_EQ(experiment.train.on_nonfinite, train::OnNonFinite::kSkip);
  EXPECT_EQ(experiment.train.max_skips_in_a_row, 3);
}

TEST(TrainSection, PrecisionIsF32OrBf16) {
  EXPECT_EQ(error_of("train:\n  precision: fp16\n"),
            "exp.yaml:2: train.precision: expected one of f32, bf16, got 'fp16'");
  EXPECT_EQ(ExperimentFile().load(kModel).train.precision, kernels::Precision::kF32);
  EXPECT_EQ(ExperimentFile().load("train:\n  precision: bf16\n" + kModel).train.precision,
            kernels::Precision::kBf16);
}

TEST(TrainSection, StepsMustBeAnInteger) {
  EXPECT_EQ(error_of("train:\n  steps: abc\n"),
            "exp.yaml:2: train.steps: expected an integer, got 'abc'");
  EXPECT_EQ(error_of("train:\n  steps: 1.5\n"),
            "exp.yaml:2: train.steps: expected an integer, got '1.5'");
  EXPECT_EQ(error_of("train:\n  steps:\n"),
            "exp.yaml:2: train.steps: expected an integer, got nothing");
}

TEST(TrainSection, BatchSizeMustBeAtLeastOne) {
  EXPECT_EQ(error_of("train:\n  batch_size: -4\n"),
            "exp.yaml:2: train.batch_size: must be >= 1, got -4");
}

TEST(TrainSection, SeedMustBeANonNegativeInteger) {
  EXPECT_EQ(error_of("train:\n  seed: -1\n"),
            "exp.yaml:2: train.seed: expected a non-negative integer, got '-1'");
}

TEST(TrainSection, EvalCountsMustBeNonNegative) {
  EXPECT_EQ(error_of("train:\n  eval_every: -1\n"),
            "exp.yaml:2: train.eval_every: must be >= 0, got -1");
  EXPECT_EQ(error_of("train:\n  eval_batches: -1\n"),
            "exp.yaml:2: train.eval_batches: must be >= 0, got -1");
  EXPECT_EQ(error_of("train:\n  eval_batch_size: -1\n"),
            "exp.yaml:2: train.eval_batch_size: must be >= 0, got -1");
  EXPECT_EQ(error_of("train:\n  eval_bleu_sentences: -1\n"),
            "exp.yaml:2: train.eval_bleu_sentences: must be >= 0, got -1");
  EXPECT_EQ(error_of("train:\n  eval_bleu_sentences: some\n"),
            "exp.yaml:2: train.eval_bleu_sentences: expected an integer, got 'some'");
}

TEST(TrainSection, UnknownKeyListsTheKnownKeys) {
  EXPECT_EQ(error_of("train:\n  steps: 3\n  stepz: 4\n"),
            "exp.yaml:3: train.stepz: unknown key (known: steps, batch_size, seed, eval_every, "
            "eval_batches, eval_batch_size, eval_bleu_sentences, on_nonfinite, max_skips_in_a_row, "
            "precision)");
}

TEST(TrainSection, MustBeAMap) {
  EXPECT_EQ(error_of("train: 5\n"), "exp.yaml:1: train: expected a map, got '5'");
}

// optimizer

TEST(OptimizerSection, NumbersMustBeFinite) {
  EXPECT_EQ(error_of("optimizer:\n  lr: .inf\n"),
            "exp.yaml:2: optimizer.lr: expected a finite number, got '.inf'");
  EXPECT_EQ(error_of("optimizer:\n  eps: .inf\n"),
            "exp.yaml:2: optimizer.eps: expected a finite number, got '.inf'");
  EXPECT_EQ(error_of("optimizer:\n  weight_decay: .nan\n"),
            "exp.yaml:2: optimizer.weight_decay: expected a finite number, got '.nan'");
  EXPECT_EQ(error_of("optimizer:\n  clip_norm: 1e999\n"),
            "exp.yaml:2: optimizer.clip_norm: expected a number, got '1e999'");
}

TEST(OptimizerSection, KindMustBeSgdAdamOrAdamw) {
  EXPECT_EQ(error_of("optimizer:\n  kind: rmsprop\n"),
            "exp.yaml:2: optimizer.kind: expected one of sgd, adam, adamw, got 'rmsprop'");
}

TEST(OptimizerSection, ShardAcrossReplicasIsTrueOrFalse) {
  EXPECT_EQ(
      error_of("optimizer:\n  shard_across_replicas: yes please\n"),
      "exp.yaml:2: optimizer.shard_across_replicas: expected true or false, got 'yes please'");
}

TEST(OptimizerSection, LrMustBePositive) {
  EXPECT_EQ(error_of("optimizer:\n  lr: -1\n"), "exp.yaml:2: optimizer.lr: must be > 0, got -1");
  EXPECT_EQ(error_of("optimizer:\n  lr: 0\n"), "exp.yaml:2: optimizer.lr: must be > 0, got 0");
}

TEST(OptimizerSection, LrMustBeANumber) {
  EXPECT_EQ(error_of("optimizer:\n  lr: fast\n"),
            "exp.yaml:2: optimizer.lr: expected a number, got 'fast'");
  EXPECT_EQ(error_of("optimizer:\n  lr: [1]\n"),
            "exp.yaml:2: optimizer.lr: expected a number, got a list");
}

TEST(OptimizerSection, MomentumMustBeInZeroToOneExcludingOne) {
  EXPECT_EQ(error_of("optimizer:\n  momentum: 1\n"),
            "exp.yaml:2: optimizer.momentum: must be in [0, 1), got 1");
  EXPECT_EQ(error_of("optimizer:\n  momentum: -0.5\n"),
            "exp.yaml:2: optimizer.momentum: must be in [0, 1), got -0.5");
}

TEST(OptimizerSection, DecayExemptIsABool) {
  EXPECT_EQ(error_of("optimizer:\n  decay_exempt: biases\n"),
            "exp.yaml:2: optimizer.decay_exempt: expected true or false, got 'biases'");
}

TEST(OptimizerSection, NesterovRequiresMomentum) {
  EXPECT_EQ(error_of("optimizer:\n  kind: sgd\n  nesterov: true\n"),
            "exp.yaml:3: optimizer.nesterov: requires optimizer.momentum > 0, got "
            "optimizer.momentum = 0");
}

TEST(OptimizerSection, NesterovMustBeABoolean) {
  EXPECT_EQ(error_of("optimizer:\n  nesterov: maybe\n"),
            "exp.yaml:2: optimizer.nesterov: expected true or false, got 'maybe'");
}

TEST(OptimizerSection, WeightDecayMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  weight_decay: -0.1\n"),
            "exp.yaml:2: optimizer.weight_decay: must be >= 0, got -0.1");
}

TEST(OptimizerSection, BetasMustBeInZeroToOneExcludingOne) {
  EXPECT_EQ(error_of("optimizer:\n  beta1: 1.0\n"),
            "exp.yaml:2: optimizer.beta1: must be in [0, 1), got 1.0");
  EXPECT_EQ(error_of("optimizer:\n  beta2: -0.1\n"),
            "exp.yaml:2: optimizer.beta2: must be in [0, 1), got -0.1");
}

TEST(OptimizerSection, EpsMustBePositive) {
  EXPECT_EQ(error_of("optimizer:\n  eps: 0\n"), "exp.yaml:2: optimizer.eps: must be > 0, got 0");
}

TEST(OptimizerSection, ClipNormMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  clip_norm: -1\n"),
            "exp.yaml:2: optimizer.clip_norm: must be >= 0, got -1");
}

TEST(OptimizerSection, ScheduleKindMustBeOneOfTheNamedSchedules) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    kind: exponential\n"),
            "exp.yaml:3: optimizer.schedule.kind: expected one of constant, step, cosine, linear, "
            "wsd, inverse_sqrt, got 'exponential'");
}

TEST(OptimizerSection, ScheduleWarmupStepsMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  schedule: {warmup_steps: -1}\n"),
            "exp.yaml:2: optimizer.schedule.warmup_steps: must be >= 0, got -1");
}

TEST(OptimizerSection, ScheduleStepSizeMustBeAtLeastOne) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    step_size: 0\n"),
            "exp.yaml:3: optimizer.schedule.step_size: must be >= 1, got 0");
}

TEST(OptimizerSection, ScheduleGammaMustBePositive) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    gamma: 0\n"),
            "exp.yaml:3: optimizer.schedule.gamma: must be > 0, got 0");
}

TEST(OptimizerSection, ScheduleMinLrMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    min_lr: -0.001\n"),
            "exp.yaml:3: optimizer.schedule.min_lr: must be >= 0, got -0.001");
}

TEST(OptimizerSection, ScheduleUnknownKeyListsTheKnownKeys) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    warmup: 5\n"),
            "exp.yaml:3: optimizer.schedule.warmup: unknown key (known: kind, warmup_steps, "
            "step_size, gamma, min_lr, decay_steps, decay_fraction, total_steps)");
}

TEST(OptimizerSection, ScheduleDecayStepsMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    decay_steps: -1\n"),
            "exp.yaml:3: optimizer.schedule.decay_steps: must be >= 0, got -1");
}

TEST(OptimizerSection, ScheduleDecayFractionMustBeInZeroToOne) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    decay_fraction: 0\n"),
            "exp.yaml:3: optimizer.schedule.decay_fraction: must be in (0, 1], got 0");
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    decay_fraction: 1.5\n"),
            "exp.yaml:3: optimizer.schedule.decay_fraction: must be in (0, 1], got 1.5");
  EXPECT_DOUBLE_EQ(ExperimentFile()
                       .load("optimizer:\n  schedule:\n    decay_fraction: 1\n" + kModel)
                       .optimizer.schedule.decay_fraction,
                   1.0);
}

TEST(OptimizerSection, WsdWarmupAndDecayStepsMustFitInTheRun) {
  const std::string head = "train:\n  steps: 10\noptimizer:\n  schedule:\n    kind: wsd\n";
  EXPECT_EQ(error_of(head + "    warmup_steps: 7\n    decay_steps: 4\n"),
            "exp.yaml:7: optimizer.schedule.decay_steps: warmup_steps + decay_steps = 7 + 4 = 11 "
            "must be at most train.steps (10)");
  EXPECT_EQ(error_of(head + "    warmup_steps: 6\n    decay_steps: 4\n"), "(no error)");
  // (Other schedules do not decay over a number of final steps.)
  EXPECT_EQ(error_of("train:\n  steps: 10\noptimizer:\n  schedule: {warmup_steps: 7, "
                     "decay_steps: 4}\n"),
            "(no error)");
}

TEST(OptimizerSection, WsdWarmupAndDecayFractionMustFitInTheRun) {
  const std::string head = "train:\n  steps: 10\noptimizer:\n  schedule:\n    kind: wsd\n";
  EXPECT_EQ(error_of(head + "    warmup_steps: 6\n    decay_fraction: 0.5\n"),
            "exp.yaml:7: optimizer.schedule.decay_fraction: warmup_steps + decay_fraction x "
            "train.steps = 6 + 5 = 11 must be at most train.steps (10)");
  // The default fraction (0.2) is not in the file: the error has no line.
  EXPECT_EQ(error_of(head + "    warmup_steps: 9\n"),
            "exp.yaml: optimizer.schedule.decay_fraction: warmup_steps + decay_fraction x "
            "train.steps = 9 + 2 = 11 must be at most train.steps (10)");
  // A --set train.steps that shortens the run is checked too.
  EXPECT_EQ(ExperimentFile().error(head + "    warmup_steps: 6\n" + kModel, {"train.steps=6"}),
            "exp.yaml: optimizer.schedule.decay_fraction: warmup_steps + decay_fraction x "
            "train.steps = 6 + 1 = 7 must be at most train.steps (6)");
}

TEST(OptimizerSection, ScheduleTotalStepsMustBeNonNegative) {
  EXPECT_EQ(error_of("optimizer:\n  schedule:\n    total_steps: -1\n"),
            "exp.yaml:3: optimizer.schedule.total_steps: must be >= 0, got -1");
}

// pipeline

TEST(PipelineSection, StagesMustBeAtLeastOneOrAuto) {
  EXPECT_EQ(error_of("pipeline:\n  stages: 0\n"),
            "exp.yaml:2: pipeline.stages: must be >= 1 or 'auto', got 0");
  EXPECT_EQ(error_of("pipeline:\n  stages: many\n"),
            "exp.yaml:2: pipeline.stages: expected an integer or 'auto', got 'many'");
}

TEST(PipelineSection, StagesMustFitAnInt) {
  EXPECT_EQ(error_of("pipeline:\n  stages: 3000000000\n"),
            "exp.yaml:2: pipeline.stages: must be <= 2147483647, got 3000000000");
}

TEST(PipelineSection, DataParallelMustBeAtLeastOneOrAuto) {
  EXPECT_EQ(error_of("pipeline:\n  data_parallel: -2\n"),
            "exp.yaml:2: pipeline.data_parallel: must be >= 1 or 'auto', got -2");
}

TEST(PipelineSection, StagesAndDataParallelCannotBothBeAuto) {
  EXPECT_EQ(error_of("pipeline:\n  stages: auto\n  data_parallel: auto\n"),
            "exp.yaml:3: pipeline.data_parallel: cannot be 'auto' when pipeline.stages is "
            "'auto'");
}

TEST(PipelineSection, MicroBatchesMustBeAtLeastOne) {
  EXPECT_EQ(error_of("pipeline:\n  micro_batches: 0\n"),
            "exp.yaml:2: pipeline.micro_batches: must be >= 1, got 0");
}

TEST(PipelineSection, ScheduleMustBeGpipe1f1bZbH1OrAuto) {
  EXPECT_EQ(error_of("pipeline:\n  schedule: zigzag\n"),
            "exp.yaml:2: pipeline.schedule: expected one of gpipe, 1f1b, zb_h1, interleaved, zbv, "
            "auto, got 'zigzag'");
}

TEST(PipelineSection, ZbvImpliesTwoChunksPerRankUnlessTheyAreGiven) {
  EXPECT_EQ(ExperimentFile().load("pipeline:\n  schedule: zbv\n" + kModel).pipeline.virtual_stages,
            2);
  // Another count is kept, for the start-up rule to refuse (train/virtual_stage_rules.h).
  EXPECT_EQ(ExperimentFile()
                .load("pipeline:\n  schedule: zbv\n  virtual_stages: 3\n" + kModel)
                .pipeline.virtual_stages,
            3);
}

TEST(PipelineSection, VirtualStagesMustBeAtLeastOne) {
  EXPECT_EQ(error_of("pipeline:\n  virtual_stages: 0\n"),
            "exp.yaml:2: pipeline.virtual_stages: must be >= 1, got 0");
  const Experiment e =
      ExperimentFile().load("pipeline:\n  schedule: interleaved\n  virtual_stages: 2\n" + kModel);
  EXPECT_EQ(e.pipeline.virtual_stages, 2);
  EXPECT_EQ(e.pipeline.schedule, plan::ScheduleKind::kInterleaved);
}

TEST(PipelineSection, RecomputeMustBeAlwaysExceptLastNeverPerLayerOrAuto) {
  EXPECT_EQ(error_of("pipeline:\n  recompute: sometimes\n"),
            "exp.yaml:2: pipeline.recompute: expected one of always, except_last, never, "
            "per_layer, auto, got 'sometimes'");
}

TEST(PipelineSection, WeightGradsMustBeOneOfItsChoices) {
  EXPECT_EQ(
      error_of("pipeline:\n  weight_grads: deferred\n"),
      "exp.yaml:2: pipeline.weight_grads: expected one of accumulate, batched, grouped, tree, "
      "auto, got 'deferred'");
}

// (At most M once the command line's --micro-batches is applied: e2e.bad_input.)
TEST(PipelineSection, WeightGroupIsACountOrAutoUnderGrouped) {
  const auto loaded = [](const std::string& pipeline) {
    return ExperimentFile().load("pipeline:\n  micro_batches: 8\n  weight_grads: grouped\n" +
                                 pipeline + kModel);
  };
  EXPECT_EQ(loaded("").pipeline.weight_grads, plan::WeightGrads::kGrouped);
  EXPECT_EQ(loaded("").pipeline.weight_group, 0);  // auto
  EXPECT_EQ(loaded("  weight_group: auto\n").pipeline.weight_group, 0);
  EXPECT_EQ(loaded("  weight_group: 3\n").pipeline.weight_group, 3);
  EXPECT_EQ(loaded("  weight_group: 8\n").pipeline.weight_group, 8);
  const std::string grouped = "pipeline:\n  micro_batches: 8\n  weight_grads: grouped\n";
  EXPECT_EQ(loaded("  weight_group: 9\n").pipeline.weight_group, 9);  // (over M: at start-up)
  EXPECT_EQ(error_of(grouped + "  weight_group: 0\n"),
            "exp.yaml:4: pipeline.weight_group: must be >= 1 or 'auto', got 0");
  EXPECT_EQ(error_of(grouped + "  weight_group: many\n"),
            "exp.yaml:4: pipeline.weight_group: expected an integer or 'auto', got 'many'");
  EXPECT_EQ(error_of("pipeline:\n  weight_grads: batched\n  weight_group: 2\n"),
            "exp.yaml:3: pipeline.weight_group: is used only with pipeline.weight_grads: grouped");
  EXPECT_EQ(error_of("pipeline:\n  weight_group: 2\n"),
            "exp.yaml:2: pipeline.weight_group: is used only with pipeline.weight_grads: grouped");
}

TEST(PipelineSection, PartitionMustBeAutoUniformOrAList) {
  EXPECT_EQ(error_of("pipeline:\n  partition: even\n"),
            "exp.yaml:2: pipeline.partition: expected 'auto', 'uniform' or a list of integers, "
            "got 'even'");
  EXPECT_EQ(error_of("pipeline:\n  partition: {a: 1}\n"),
            "exp.yaml:2: pipeline.partition: expected 'auto', 'uniform' or a list of integers, "
            "got a map");
  EXPECT_EQ(error_of("pipeline:\n  partition: []\n"),
            "exp.yaml:2: pipeline.partition: must not be an empty list (use 'auto' or 'uniform')");
}

TEST(PipelineSection, PartitionModeIsAutoByDefaultAndSetByTheKey) {
  using plan::PartitionMode;
  EXPECT_EQ(ExperimentFile().load(kModel).pipeline.partition_mode, PartitionMode::kAuto);
  EXPECT_EQ(
      ExperimentFile().load("pipeline:\n  partition: auto\n" + kModel).pipeline.partition_mode,
      PartitionMode::kAuto);
  EXPECT_EQ(
      ExperimentFile().load("pipeline:\n  partition: uniform\n" + kModel).pipeline.partition_mode,
      PartitionMode::kUniform);
  const Experiment manual =
      ExperimentFile().load("pipeline:\n  stages: 2\n  partition: [1, 2]\n" + kModel);
  EXPECT_EQ(manual.pipeline.partition_mode, PartitionMode::kManual);
  EXPECT_EQ(manual.pipeline.partition, (std::vector<int>{1, 2}));
}

TEST(PipelineSection, BalanceIsPredictedByDefaultAndMeasuredOnRequest) {
  const Experiment defaults = ExperimentFile().load(kModel);
  EXPECT_EQ(defaults.pipeline.balance, plan::Balance::kPredicted);
  const Experiment measured = ExperimentFile().load(
      "pipeline:\n  balance: measured\n  balance_after: 5\n  balance_every: 10\n"
      "  balance_moves: 2\n" +
      kModel);
  EXPECT_EQ(measured.pipeline.balance, plan::Balance::kMeasured);
  EXPECT_EQ(measured.pipeline.balance_after, 5);
  EXPECT_EQ(measured.pipeline.balance_every, 10);
  EXPECT_EQ(measured.pipeline.balance_moves, 2);
}

TEST(PipelineSection, BalanceKeysAreValidated) {
  EXPECT_EQ(error_of("pipeline:\n  balance: timed\n"),
            "exp.yaml:2: pipeline.balance: expected one of predicted, measured, got 'timed'");
  EXPECT_EQ(error_of("pipeline:\n  partition: uniform\n  balance: measured\n"),
            "exp.yaml:3: pipeline.balance: measured re-partitions the auto partition; "
            "pipeline.partition is uniform");
  EXPECT_EQ(error_of("pipeline:\n  stages: 2\n  partition: [1, 2]\n  balance: measured\n"),
            "exp.yaml:4: pipeline.balance: measured re-partitions the auto partition; "
            "pipeline.partition is a list of counts");
  EXPECT_EQ(error_of("pipeline:\n  balance_after: 2\n"),
            "exp.yaml:2: pipeline.balance_after: is used only with pipeline.balance: measured");
  EXPECT_EQ(error_of("pipeline:\n  balance: predicted\n  balance_moves: 2\n"),
            "exp.yaml:3: pipeline.balance_moves: is used only with pipeline.balance: measured");
  EXPECT_EQ(error_of("pipeline:\n  balance: measured\n  balance_after: 0\n"),
            "exp.yaml:3: pipeline.balance_after: must be >= 1, got 0");
  EXPECT_EQ(error_of("pipeline:\n  balance: measured\n  balance_every: -1\n"),
            "exp.yaml:3: pipeline.balance_every: must be >= 0, got -1");
  EXPECT_EQ(error_of("pipeline:\n  balance: measured\n  balance_moves: 0\n"),
            "exp.yaml:3: pipeline.balance_moves: must be >= 1, got 0");
}

// The memory limit as parsed from `memory_limit: <text>`.
int64_t memory_limit_of(const std::string& text) {
  return ExperimentFile()
      .load("pipeline:\n  memory_limit: " + text + "\n" + kModel)
      .pipeline.memory_limit;
}

TEST(PipelineSection, MemoryLimitTakesBinaryUnitsInAnyCase) {
  EXPECT_EQ(ExperimentFile().load(kModel).pipeline.memory_limit, 0);  // none by default
  EXPECT_EQ(memory_limit_of("6GiB"), int64_t{6} << 30);
  EXPECT_EQ(memory_limit_of("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(memory_limit_of("2G"), int64_t{2} << 30);
  EXPECT_EQ(memory_limit_of("2GB"), int64_t{2} << 30);
  EXPECT_EQ(memory_limit_of("2gib"), int64_t{2} << 30);
  EXPECT_EQ(memory_limit_of("1.5 TiB"), int64_t{3} << 39);
  EXPECT_EQ(memory_limit_of("64k"), int64_t{64} << 10);
  EXPECT_EQ(memory_limit_of("1048576"), int64_t{1} << 20);
  EXPECT_EQ(memory_limit_of("100B"), 100);
  EXPECT_EQ(memory_limit_of("0.5KiB"), 512);
  EXPECT_EQ(memory_limit_of("none"), 0);
}

TEST(PipelineSection, MemoryLimitMustBeAPositiveSize) {
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: lots\n"),
            "exp.yaml:2: pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got "
            "'lots'");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: 6 GiBs\n"),
            "exp.yaml:2: pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got "
            "'6 GiBs'");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: -1GiB\n"),
            "exp.yaml:2: pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got "
            "'-1GiB'");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: 1.2.3G\n"),
            "exp.yaml:2: pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got "
            "'1.2.3G'");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: [1, 2]\n"),
            "exp.yaml:2: pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got "
            "a list");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: 0GiB\n"),
            "exp.yaml:2: pipeline.memory_limit: must be > 0, got 0GiB");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: 0.1B\n"),
            "exp.yaml:2: pipeline.memory_limit: must be > 0, got 0.1B");
  EXPECT_EQ(error_of("pipeline:\n  memory_limit: 9000000TiB\n"),
            "exp.yaml:2: pipeline.memory_limit: must be < 8 EiB, got 9000000TiB");
}

TEST(PipelineSection, MemoryLimitFromTheCommandLineNamesTheOverride) {
  EXPECT_EQ(ExperimentFile().error(kModel, {"pipeline.memory_limit=big"}),
            "--set pipeline.memory_limit: expected a size such as 6GiB, 512MiB or 2G, got 'big'");
  EXPECT_EQ(ExperimentFile().load(kModel, {"pipeline.memory_limit=3MiB"}).pipeline.memory_limit,
            int64_t{3} << 20);
}

TEST(PipelineSection, PartitionEntriesMustBeAtLeastOne) {
  EXPECT_EQ(error_of("pipeline:\n  stages: 2\n  partition:\n    - 2\n    - 0\n"),
            "exp.yaml:5: pipeline.partition[1]: must be >= 1, got 0");
  EXPECT_EQ(error_of("pipeline:\n  stages: 2\n  partition: [2, x]\n"),
            "exp.yaml:3: pipeline.partition[1]: expected an integer, got 'x'");
}

TEST(PipelineSection, PartitionLengthMustEqualStages) {
  EXPECT_EQ(error_of("pipeline:\n  stages: 2\n  partition: [1, 1, 1]\n"),
            "exp.yaml:3: pipeline.partition: must have as many entries as pipeline.stages = 2, "
            "got 3");
}

// Under virtual stages the partition lists every rank's chunks: K·v stages.
TEST(PipelineSection, PartitionLengthMustEqualStagesTimesVirtualStages) {
  EXPECT_EQ(error_of("pipeline:\n  stages: 2\n  virtual_stages: 2\n  partition: [1, 1]\n"),
            "exp.yaml:4: pipeline.partition: must have as many entries as pipeline.stages x "
            "pipeline.virtual_stages = 4, got 2");
}

TEST(PipelineSection, PartitionOfAnyLengthIsAcceptedWhenStagesIsAuto) {
  const Experiment e =
      ExperimentFile().load("pipeline:\n  stages: auto\n  partition: [1, 2, 3]\n" + kModel);
  EXPECT_EQ(e.pipeline.partition, (std::vector<int>{1, 2, 3}));
}

TEST(CrossSections, BatchSizeMustDivideByMicroBatchesTimesDataParallel) {
  EXPECT_EQ(error_of("train:\n  batch_size: 100\npipeline:\n  micro_batches: 4\n"
                     "  data_parallel: 2\n"),
            "exp.yaml:2: train.batch_size: must be divisible by pipeline.micro_batches x "
            "data-parallel replicas = 4 x 2 = 8, got 100");
}

TEST(CrossSections, BatchSizeMustDivideByMicroBatchesWhenDataParallelIsAuto) {
  EXPECT_EQ(error_of("train:\n  batch_size: 10\npipeline:\n  micro_batches: 4\n"
                     "  data_parallel: auto\n  stages: 2\n"),
            "exp.yaml:2: train.batch_size: must be divisible by pipeline.micro_batches x "
            "data-parallel replicas = 4 x (auto), got 10");
}

TEST(CrossSections, DefaultBatchSizeIsCheckedWithoutALine) {
  EXPECT_EQ(error_of("pipeline:\n  micro_batches: 5\n"),
            "exp.yaml: train.batch_size: must be divisible by pipeline.micro_batches x "
            "data-parallel replicas = 5 x 1 = 5, got 64");
}

// checkpoint, log

TEST(CheckpointSection, EveryMustBeNonNegative) {
  EXPECT_EQ(error_of("checkpoint:\n  every: -10\n"),
            "exp.yaml:2: checkpoint.every: must be >= 0, got -10");
}

TEST(CheckpointSection, KeepMustBeAtLeastOne) {
  EXPECT_EQ(error_of("checkpoint:\n  keep: 0\n"),
            "exp.yaml:2: checkpoint.keep: must be >= 1, got 0");
}

TEST(CheckpointSection, PeerCopyIsTrueOrFalse) {
  EXPECT_EQ(error_of("checkpoint:\n  peer_copy: sometimes\n"),
            "exp.yaml:2: checkpoint.peer_copy: expected true or false, got 'sometimes'");
}

TEST(LogSection, EveryMustBeAtLeastOne) {
  EXPECT_EQ(error_of("log:\n  every: 0\n"), "exp.yaml:2: log.every: must be >= 1, got 0");
}

TEST(LogSection, LevelMustBeAKnownLevel) {
  EXPECT_EQ(error_of("log:\n  level: loud\n"),
            "exp.yaml:2: log.level: expected one of trace, debug, info, warn, error, got 'loud'");
}

TEST(LogSection, TraceStepsAreAnAscendingListOfStepsWithinTheRun) {
  EXPECT_EQ(error_of("log:\n  trace_steps: 5\n"),
            "exp.yaml:2: log.trace_steps: expected a list of steps, got '5'");
  EXPECT_EQ(error_of("log:\n  trace_steps: [0, 1]\n"),
            "exp.yaml:2: log.trace_steps[0]: must be >= 1, got 0");
  EXPECT_EQ(error_of("log:\n  trace_steps: [2, x]\n"),
            "exp.yaml:2: log.trace_steps[1]: expected an integer, got 'x'");
  EXPECT_EQ(error_of("log:\n  trace_steps:\n    - 3\n    - 3\n"),
            "exp.yaml:4: log.trace_steps[1]: steps must be ascending, got 3 after 3");
  EXPECT_EQ(error_of("train:\n  steps: 6\nlog:\n  trace_steps:\n    - 5\n    - 7\n"),
            "exp.yaml:6: log.trace_steps[1]: step 7 is beyond train.steps (6)");
  EXPECT_TRUE(ExperimentFile().load(kModel).log.trace_steps.empty());
  EXPECT_EQ(ExperimentFile().load("log:\n  trace_steps: [5, 6]\n" + kModel).log.trace_steps,
            (std::vector<int64_t>{5, 6}));
}

TEST(LogSection, PeakFlopsIsAPositiveNumberAndMeasuredWithoutIt) {
  EXPECT_EQ(error_of("log:\n  peak_flops: 0\n"), "exp.yaml:2: log.peak_flops: must be > 0, got 0");
  EXPECT_EQ(error_of("log:\n  peak_flops: -1e9\n"),
            "exp.yaml:2: log.peak_flops: must be > 0, got -1e9");
  EXPECT_EQ(error_of("log:\n  peak_flops: fast\n"),
            "exp.yaml:2: log.peak_flops: expected a number, got 'fast'");
  EXPECT_EQ(ExperimentFile().load(kModel).log.peak_flops, 0.0);  // measured at start-up
  EXPECT_EQ(ExperimentFile().load("log:\n  peak_flops: 5.5e10\n" + kModel).log.peak_flops, 5.5e10);
}

TEST(LogSection, TensorboardIsTrueOrFalse) {
  EXPECT_EQ(error_of("log:\n  tensorboard: sometimes\n"),
            "exp.yaml:2: log.tensorboard: expected true or false, got 'sometimes'");
  EXPECT_FALSE(ExperimentFile().load(kModel).log.tensorboard);
  EXPECT_TRUE(ExperimentFile().load("log:\n  tensorboard: true\n" + kModel).log.tensorboard);
}

// data

TEST(DataSection, DatasetMustBeAKnownKind) {
  EXPECT_EQ(error_of("data:\n  dataset: cifar10\n"),
            "exp.yaml:2: data.dataset: expected one of fashion_mnist, synthetic, text, tokens, "
            "tensors, pairs, got 'cifar10'");
}

TEST(DataSection, TensorsNeedAPath) {
  EXPECT_EQ(error_of("data:\n  dataset: tensors\n"),
            "exp.yaml:2: data.dataset: tensors needs data.path: a .safetensors file holding "
            "'inputs' and 'targets'");
}

TEST(DataSection, PathMustBeAString) {
  EXPECT_EQ(error_of("data:\n  path: {a: 1}\n"),
            "exp.yaml:2: data.path: expected a string, got a map");
}

TEST(DataSection, FlagsMustBeBooleans) {
  EXPECT_EQ(error_of("data:\n  flatten: 2\n"),
            "exp.yaml:2: data.flatten: expected true or false, got '2'");
  EXPECT_EQ(error_of("data:\n  normalize: x\n"),
            "exp.yaml:2: data.normalize: expected true or false, got 'x'");
  EXPECT_EQ(error_of("data:\n  augment_flip: x\n"),
            "exp.yaml:2: data.augment_flip: expected true or false, got 'x'");
  EXPECT_EQ(error_of("data:\n  tokens: x\n"),
            "exp.yaml:2: data.tokens: expected true or false, got 'x'");
}

TEST(DataSection, AugmentCropPaddingMustBeNonNegative) {
  EXPECT_EQ(error_of("data:\n  augment_crop_padding: -1\n"),
            "exp.yaml:2: data.augment_crop_padding: must be >= 0, got -1");
}

TEST(DataSection, SizesMustBeAtLeastOne) {
  EXPECT_EQ(error_of("data:\n  num_examples: 0\n"),
            "exp.yaml:2: data.num_examples: must be >= 1, got 0");
  EXPECT_EQ(error_of("data:\n  features: 0\n"), "exp.yaml:2: data.features: must be >= 1, got 0");
  EXPECT_EQ(error_of("data:\n  seq_len: 0\n"), "exp.yaml:2: data.seq_len: must be >= 1, got 0");
}

TEST(DataSection, ClassesMustBeNonNegative) {
  EXPECT_EQ(error_of("data:\n  classes: -1\n"), "exp.yaml:2: data.classes: must be >= 0, got -1");
}

TEST(DataSection, ValFractionMustBeStrictlyBetweenZeroAndOne) {
  EXPECT_EQ(error_of("data:\n  val_fraction: 0\n"),
            "exp.yaml:2: data.val_fraction: must be in (0, 1), got 0");
  EXPECT_EQ(error_of("data:\n  val_fraction: 1\n"),
            "exp.yaml:2: data.val_fraction: must be in (0, 1), got 1");
}

TEST(DataSection, VocabMustBeAtLeastTwo) {
  EXPECT_EQ(error_of("data:\n  vocab: 1\n"), "exp.yaml:2: data.vocab: must be >= 2, got 1");
}

}  // namespace
}  // namespace mpipe::config
