// Tests for resume_overrides: a run's stored settings back on an experiment file that differs,
// the command line's own settings left to it, and the values read back as stored.
#include "config/stored_settings.h"

#include <gtest/gtest.h>

#include <iterator>

#include "config/resolved_settings.h"
#include "core/error.h"
#include "experiment_file.h"

namespace mpipe::config {
namespace {

using Settings = std::map<std::string, std::string>;

const std::string kFull = std::string(MPIPE_TEST_DATA_DIR) + "/full.yaml";

// The resolved settings of `yaml` after the overrides that restore `stored` over it, and
// `command_line` after them, as a resume applies them.
Settings restored(const ExperimentFile& file, const std::string& yaml, const Settings& stored,
                  const std::vector<std::string>& command_line = {}) {
  const std::string path = file.write(yaml);
  std::vector<std::string> overrides =
      resume_overrides(stored, resolved_settings(load_experiment(path, command_line)), command_line)
          .overrides;
  overrides.insert(overrides.end(), command_line.begin(), command_line.end());
  return resolved_settings(load_experiment(path, overrides));
}

TEST(ResumeOverrides, GiveADefaultFileEverySettingOfAnother) {
  const Settings stored = resolved_settings(load_experiment(kFull, {}));
  ExperimentFile file;
  EXPECT_EQ(restored(file, kModel, stored), stored);
}

TEST(ResumeOverrides, GiveAFullFileEveryDefault) {
  // The defaults' spellings (measured, none, auto, an empty data.path, model.init left out)
  // read back too.
  ExperimentFile file;
  const Settings stored = resolved_settings(file.load(kModel));
  EXPECT_EQ(restored(file,
                     "model:\n  init: gpt2\n  layers: [{type: relu}]\n" +
                         std::string("pipeline: {stages: 2}\n"),
                     stored),
            stored);
  std::ifstream full(kFull);
  const std::string full_yaml((std::istreambuf_iterator<char>(full)), {});
  EXPECT_EQ(restored(file, full_yaml, stored), stored);
}

TEST(ResumeOverrides, SameSettingsNeedNone) {
  ExperimentFile file;
  const Settings settings = resolved_settings(file.load(kModel));
  const SettingsRestore restore = resume_overrides(settings, settings, {});
  EXPECT_TRUE(restore.overrides.empty());
  EXPECT_TRUE(restore.restored.empty());
}

TEST(ResumeOverrides, ListWhatTheyRestoreWhereTheFileDiffers) {
  ExperimentFile file;
  const Settings stored =
      resolved_settings(file.load("model:\n  layers: [{type: linear, units: 8}, {type: relu}]\n"
                                  "train: {steps: 4}\nlog: {tensorboard: true}\n"));
  const Settings now = resolved_settings(
      file.load("model:\n  layers: [{type: linear, units: 4}]\ntrain: {steps: 4}\n"));
  const SettingsRestore restore = resume_overrides(stored, now, {});
  EXPECT_EQ(restore.overrides,
            (std::vector<std::string>{"log.tensorboard=true",
                                      "model.layers=[{type: linear, units: 8}, {type: relu}]"}));
  EXPECT_EQ(restore.restored,
            (std::vector<std::string>{"log.tensorboard: true (file: false)",
                                      "model.layers[0].units: 8 (file: 4)",
                                      "model.layers[1].type: relu (file: (none))"}));
}

TEST(ResumeOverrides, LeaveWhatTheCommandLineSetsToIt) {
  ExperimentFile file;
  const Settings stored =
      resolved_settings(file.load("train: {steps: 4, seed: 3}\noptimizer: {lr: 0.05}\n" + kModel));
  const std::vector<std::string> command_line = {"optimizer.lr=0.2", "train={steps: 9}"};
  const SettingsRestore restore =
      resume_overrides(stored, resolved_settings(file.load(kModel, command_line)), command_line);
  // train.seed 3 is under train={...}; the schedule's length is not.
  EXPECT_EQ(restore.restored,
            std::vector<std::string>{"optimizer.schedule.total_steps: 4 (file: 9)"});
  const Settings now = restored(file, kModel, stored, command_line);
  EXPECT_EQ(now.at("optimizer.lr"), "0.2");
  EXPECT_EQ(now.at("train.steps"), "9");
  EXPECT_EQ(now.at("train.seed"), "1");
  EXPECT_EQ(now.at("optimizer.schedule.total_steps"), "4");
}

TEST(ResumeOverrides, KeepTheScheduleLengthWhenTheCommandLineChangesTheSteps) {
  ExperimentFile file;
  const Settings stored = resolved_settings(file.load("train: {steps: 313}\n" + kModel));
  EXPECT_EQ(stored.at("optimizer.schedule.total_steps"), "313");
  const Settings now = restored(file, kModel, stored, {"train.steps=600"});
  EXPECT_EQ(now.at("train.steps"), "600");
  EXPECT_EQ(now.at("optimizer.schedule.total_steps"), "313");
}

TEST(ResumeOverrides, GiveARunStoredBeforeTheScheduleLengthItsTrainSteps) {
  ExperimentFile file;
  Settings stored = resolved_settings(file.load("train: {steps: 6}\n" + kModel));
  stored.erase("optimizer.schedule.total_steps");
  const Settings now = restored(file, kModel, stored, {"train.steps=12"});
  EXPECT_EQ(now.at("optimizer.schedule.total_steps"), "6");
}

TEST(ResumeOverrides, IgnoreSettingsOnlyOneSideHasOutsideTheModel) {
  ExperimentFile file;
  const Settings now = resolved_settings(file.load(kModel));
  Settings stored = now;
  stored["pipeline.global_micro_batches"] = "4";  // recorded beside the settings
  stored["train.retired_key"] = "1";              // a setting this version lacks
  stored.erase("log.level");                      // one the run's version lacked
  const SettingsRestore restore = resume_overrides(stored, now, {});
  EXPECT_TRUE(restore.overrides.empty());
  EXPECT_TRUE(restore.restored.empty());
}

TEST(ResumeOverrides, WriteStringsSoThatTheyReadBack) {
  ExperimentFile file;
  const Settings stored =
      resolved_settings(file.load("data: {path: '/tmp/a #1: b'}\n"
                                  "model:\n  layers: [{type: linear, units: 2, init: 'x: y'}]\n"));
  const Settings now = restored(file, "data: {path: /tmp/b}\n" + kModel, stored);
  EXPECT_EQ(now.at("data.path"), "/tmp/a #1: b");
  EXPECT_EQ(now.at("model.layers[0].init"), "x: y");
}

TEST(StoredModel, RebuildsTheModelAndOptimizerOfTheSettingsAlone) {
  Experiment experiment = load_experiment(kFull, {});
  const Settings stored = resolved_settings(experiment);
  StoredModel rebuilt = stored_model(stored, "meta.json");
  experiment.model = std::move(rebuilt.model);
  experiment.optimizer = rebuilt.optimizer;
  EXPECT_EQ(resolved_settings(experiment), stored);
}

TEST(StoredModel, NamesTheFileAndTheKeyOfASettingThatBuildsNoModel) {
  Settings stored = resolved_settings(load_experiment(kFull, {}));
  stored["optimizer.kind"] = "lion";
  try {
    stored_model(stored, "meta.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    // The line is the value's own text's (each setting is parsed alone), not meta.json's.
    EXPECT_STREQ(e.what(),
                 "meta.json:1: optimizer.kind: expected one of sgd, adam, adamw, got 'lion'");
  }
}

}  // namespace
}  // namespace mpipe::config
