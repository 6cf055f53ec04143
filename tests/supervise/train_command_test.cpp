// Tests for the train command a supervisor runs: what it reads of it, its bad inputs, and the
// relaunch's command line.
#include "supervise/train_command.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;
using Args = std::vector<std::string>;

TEST(TrainCommand, ReadsTheConfigTheOverridesAndTheRunDirectory) {
  const TrainCommand train = parse_train_command(
      {"train", "exp.yaml", "--set", "train.steps=9", "--run-dir=/r", "--resume",
       "--set=comm.timeout=3s", "--export-weights", "w.safetensors"});
  EXPECT_EQ(train.config_path, "exp.yaml");
  EXPECT_EQ(train.overrides, (Args{"train.steps=9", "comm.timeout=3s"}));
  EXPECT_EQ(train.run_dir, "/r");
  EXPECT_EQ(train.args, (Args{"exp.yaml", "--set", "train.steps=9", "--run-dir=/r",
                              "--set=comm.timeout=3s", "--export-weights", "w.safetensors"}));
}

TEST(TrainCommand, ARelaunchResumesOnTheNewLayout) {
  const TrainCommand train =
      parse_train_command({"train", "exp.yaml", "--resume-or-start", "--set", "a.b=1"});
  EXPECT_EQ(relaunch_command(train, {.stages = 2, .replicas = 1, .micro_batches = 4}, false),
            (Args{"train", "exp.yaml", "--set", "a.b=1", "--resume-or-start", "--set",
                  "pipeline.stages=2", "--set", "pipeline.data_parallel=1", "--set",
                  "pipeline.micro_batches=4"}));
  EXPECT_EQ(relaunch_command(train, {.stages = 1, .replicas = 2, .micro_batches = 2}, true).back(),
            "pipeline.partition=auto");
}

TEST(TrainCommand, EveryBadCommandIsOneLine) {
  const auto error = [](const Args& command) {
    return input_error_of([&] { parse_train_command(command); });
  };
  EXPECT_EQ(error({}),
            "supervise: the command after -- must be `train CONFIG [options]` or `serve --spool "
            "DIR [options]`, got ''");
  EXPECT_EQ(error({"eval", "exp.yaml"}),
            "supervise: the command after -- must be `train CONFIG [options]` or `serve --spool "
            "DIR [options]`, got 'eval'");
  EXPECT_EQ(error({"train"}), "supervise: train needs a config (train CONFIG ...)");
  EXPECT_EQ(error({"train", "--run-dir", "r"}),
            "supervise: train needs a config (train CONFIG ...)");
  EXPECT_EQ(error({"train", "a.yaml", "b.yaml"}),
            "supervise: train takes one config, got 'a.yaml' and 'b.yaml'");
  EXPECT_EQ(error({"train", "a.yaml", "--set"}), "supervise: train option --set needs a value");
  EXPECT_EQ(error({"train", "a.yaml", "--steps", "3"}),
            "supervise: train option '--steps' is not one the supervisor knows (--set, "
            "--run-dir, --export-weights, --init-weights, --init-skip, --resume, "
            "--resume-or-start)");
}

}  // namespace
}  // namespace mpipe::supervise
