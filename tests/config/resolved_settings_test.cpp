// Tests for resolved_settings: every key with its YAML spelling, defaults included, and
// values that read back to the same experiment.
#include "config/resolved_settings.h"

#include <gtest/gtest.h>

#include "experiment_file.h"

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

Settings full_file_settings() {
  return resolved_settings(load_experiment(std::string(MPIPE_TEST_DATA_DIR) + "/full.yaml", {}));
}

Settings without_model(Settings settings) {
  std::erase_if(settings, [](const auto& entry) { return entry.first.starts_with("model."); });
  return settings;
}

TEST(ResolvedSettings, FullFileGivesEveryKeyWithItsYamlSpelling) {
  EXPECT_EQ(full_file_settings(), (Settings{{"model.loss", "mse"},
                                            {"model.layers[0].type", "linear"},
                                            {"model.layers[0].units", "256"},
                                            {"model.layers[1].type", "relu"},
                                            {"data.dataset", "synthetic"},
                                            {"data.path", "/tmp/data"},
                                            {"data.flatten", "false"},
                                            {"data.normalize", "false"},
                                            {"data.augment_crop_padding", "4"},
                                            {"data.augment_flip", "true"},
                                            {"data.num_examples", "1000"},
                                            {"data.features", "32"},
                                            {"data.classes", "0"},
                                            {"data.seq_len", "16"},
                                            {"data.val_fraction", "0.25"},
                                            {"data.vocab", "100"},
                                            {"data.tokens", "true"},
                                            {"train.steps", "500"},
                                            {"train.batch_size", "96"},
                                            {"train.seed", "18446744073709551615"},
                                            {"train.eval_every", "50"},
                                            {"train.eval_batches", "4"},
                                            {"train.eval_batch_size", "32"},
                                            {"train.eval_bleu_sentences", "50"},
                                            {"train.on_nonfinite", "stop"},
                                            {"train.max_skips_in_a_row", "10"},
                                            {"train.precision", "bf16"},
                                            {"optimizer.kind", "sgd"},
                                            {"optimizer.lr", "0.05"},
                                            {"optimizer.momentum", "0.9"},
                                            {"optimizer.nesterov", "true"},
                                            {"optimizer.weight_decay", "0.0001"},
                                            {"optimizer.decay_exempt", "true"},
                                            {"optimizer.beta1", "0.8"},
                                            {"optimizer.beta2", "0.99"},
                                            {"optimizer.eps", "1e-06"},
                                            {"optimizer.clip_norm", "1.5"},
                                            {"optimizer.shard_across_replicas", "true"},
                                            {"optimizer.schedule.kind", "cosine"},
                                            {"optimizer.schedule.warmup_steps", "10"},
                                            {"optimizer.schedule.step_size", "20"},
                                            {"optimizer.schedule.gamma", "0.5"},
                                            {"optimizer.schedule.min_lr", "0.001"},
                                            {"optimizer.schedule.decay_steps", "30"},
                                            {"optimizer.schedule.decay_fraction", "0.1"},
                                            {"optimizer.schedule.total_steps", "400"},
                                            {"pipeline.stages", "2"},
                                            {"pipeline.data_parallel", "3"},
                                            {"pipeline.micro_batches", "4"},
                                            {"pipeline.virtual_stages", "1"},
                                            {"pipeline.schedule", "1f1b"},
                                            {"pipeline.recompute", "except_last"},
                                            {"pipeline.weight_grads", "batched"},
                                            {"pipeline.partition", "[1, 1]"},
                                            {"pipeline.memory_limit", "3221225472"},
                                            {"checkpoint.every", "100"},
                                            {"checkpoint.keep", "5"},
                                            {"checkpoint.peer_copy", "true"},
                                            {"log.every", "25"},
                                            {"log.level", "debug"},
                                            {"log.trace_steps", "[5, 6]"},
                                            {"log.peak_flops", "25000000000"},
                                            {"log.tensorboard", "true"}}));
}

TEST(ResolvedSettings, DefaultsAreIncluded) {
  ExperimentFile file;
  const Settings settings = resolved_settings(file.load(kModel));
  EXPECT_EQ(settings.size(), full_file_settings().size() - 2);  // the model has one layer
  EXPECT_EQ(settings.at("optimizer.lr"), "0.001");
  EXPECT_EQ(settings.at("optimizer.kind"), "adam");
  EXPECT_EQ(settings.at("optimizer.eps"), "1e-08");
  EXPECT_EQ(settings.at("train.seed"), "1");
  EXPECT_EQ(settings.at("data.dataset"), "fashion_mnist");
  EXPECT_EQ(settings.at("data.path"), "");
  EXPECT_EQ(settings.at("pipeline.partition"), "auto");  // the default mode
  EXPECT_EQ(resolved_settings(file.load("pipeline:\n  partition: uniform\n" + kModel))
                .at("pipeline.partition"),
            "uniform");
  EXPECT_EQ(settings.at("pipeline.schedule"), "gpipe");
  EXPECT_EQ(settings.at("pipeline.recompute"), "auto");  // the default: the planner chooses
  EXPECT_EQ(resolved_settings(file.load("pipeline:\n  recompute: per_layer\n" + kModel))
                .at("pipeline.recompute"),
            "per_layer");
  EXPECT_EQ(settings.at("pipeline.weight_grads"), "auto");  // batched when recompute is never
  EXPECT_EQ(settings.at("pipeline.memory_limit"), "none");
  EXPECT_EQ(settings.at("optimizer.schedule.kind"), "constant");
  EXPECT_EQ(settings.at("model.loss"), "cross_entropy");
}

TEST(ResolvedSettings, ModelInitIsWrittenOnlyWhenSet) {
  // (A run saved before model.init existed resumes with the default: no key, no change.)
  ExperimentFile file;
  EXPECT_FALSE(resolved_settings(file.load(kModel)).contains("model.init"));
  const std::string gpt2 = "model:\n  init: gpt2\n  layers: [{type: relu}]\n";
  EXPECT_EQ(resolved_settings(file.load(gpt2)).at("model.init"), "gpt2");
}

TEST(ResolvedSettings, ScheduleLengthIsTrainStepsUnlessSet) {
  // Written as a number, so that a resume that changes train.steps keeps it.
  ExperimentFile file;
  EXPECT_EQ(resolved_settings(file.load("train: {steps: 313}\n" + kModel))
                .at("optimizer.schedule.total_steps"),
            "313");
  EXPECT_EQ(resolved_settings(
                file.load("train: {steps: 313}\n" + kModel, {"optimizer.schedule.total_steps=600"}))
                .at("optimizer.schedule.total_steps"),
            "600");
}

TEST(ResolvedSettings, AutoCountsStayAuto) {
  ExperimentFile file;
  const Settings settings = resolved_settings(file.load("pipeline: {stages: auto}\n" + kModel));
  EXPECT_EQ(settings.at("pipeline.stages"), "auto");
}

TEST(ResolvedSettings, LayerAttributesOfEveryKindAreWrittenAsYaml) {
  ExperimentFile file;
  const Settings settings = resolved_settings(
      file.load("model:\n  layers:\n    - {type: conv2d, channels: 8, kernel: [3, 3], bias: false, "
                "init: xavier, scale: 0.5}\n"
                "    - repeat: 2\n      layers: [{type: relu}]\n"));
  EXPECT_EQ(settings.at("model.layers[0].type"), "conv2d");
  EXPECT_EQ(settings.at("model.layers[0].channels"), "8");
  EXPECT_EQ(settings.at("model.layers[0].kernel"), "[3, 3]");
  EXPECT_EQ(settings.at("model.layers[0].bias"), "false");
  EXPECT_EQ(settings.at("model.layers[0].init"), "xavier");
  EXPECT_EQ(settings.at("model.layers[0].scale"), "0.5");
  EXPECT_EQ(settings.at("model.layers[2].type"), "relu");
  EXPECT_EQ(settings.count("model.layers[3].type"), 0u);
}

TEST(ResolvedSettings, EveryValueSetBackWithSetGivesTheSameSettings) {
  // A default experiment with every non-model setting of full.yaml applied as --set key=value
  // must resolve to full.yaml's settings: the texts are spellings the parser reads back.
  const Settings full = full_file_settings();
  std::vector<std::string> overrides;
  for (const auto& [key, value] : without_model(full)) overrides.push_back(key + "=" + value);
  ExperimentFile file;
  EXPECT_EQ(without_model(resolved_settings(file.load(kModel, overrides))), without_model(full));
}

TEST(ResolvedSettings, NumbersUseTheShortestTextThatReadsBackExactly) {
  ExperimentFile file;
  const Settings settings =
      resolved_settings(file.load("optimizer: {lr: 0.1, eps: 3.0e-9, weight_decay: 1}\n" + kModel));
  EXPECT_EQ(settings.at("optimizer.lr"), "0.1");
  EXPECT_EQ(settings.at("optimizer.eps"), "3e-09");
  EXPECT_EQ(settings.at("optimizer.weight_decay"), "1");
}

}  // namespace
}  // namespace mpipe::config
