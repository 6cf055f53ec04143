// Tests for check_data_paths: a data file or folder that is not there is one line naming the key's
// file and line (or --set), and the working directory a relative path was read from.
#include "job/data_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::job {
namespace {

const std::string kModel =
    "model:\n"
    "  layers:\n"
    "    - {type: embedding, vocab: 16, dim: 8}\n"
    "    - {type: linear, units: 16}\n"
    "train: {steps: 2, batch_size: 4}\n";

const std::string kRelative = " (a relative path, read from the working directory " +
                              std::filesystem::current_path().string() + ")";

class DataPaths : public ::testing::Test {
 protected:
  // kModel + `data` (its lines 6 on) as exp.yaml, loaded with `overrides`.
  config::Experiment load(const std::string& data, const std::vector<std::string>& overrides = {}) {
    std::ofstream(dir_.file("exp.yaml")) << kModel << data;
    return config::load_experiment(dir_.file("exp.yaml"), overrides);
  }

  // check_data_paths' error, the folder removed from its start; "(no error)" when it passes.
  std::string error(const config::Experiment& experiment) {
    try {
      check_data_paths(experiment);
    } catch (const InputError& e) {
      const std::string text = e.what();
      const std::string folder = dir_.path().string() + "/";
      return text.starts_with(folder) ? text.substr(folder.size()) : text;
    }
    return "(no error)";
  }

  // An empty file in the folder; its path.
  std::string touch(const std::string& name) {
    std::ofstream(dir_.file(name)) << "";
    return dir_.file(name);
  }

  testing::TempDir dir_;
};

TEST_F(DataPaths, ARelativeShardGlobThatMatchesNothingNamesItsLineAndTheWorkingDirectory) {
  const config::Experiment experiment = load(
      "data:\n  dataset: tokens\n  train: no_such_folder/train_*.bin\n  val: " + touch("val.bin") +
      "\n  seq_len: 4\n");
  EXPECT_EQ(error(experiment),
            "exp.yaml:8: data.train: no file matches 'no_such_folder/train_*.bin'" + kRelative);
}

TEST_F(DataPaths, AnAbsolutePathNeedsNoWorkingDirectory) {
  const std::string train = touch("train_000000.bin");
  const config::Experiment experiment =
      load("data:\n  dataset: tokens\n  train: " + train + "\n  val: " + dir_.file("val_*.bin") +
           "\n  seq_len: 4\n");
  EXPECT_EQ(error(experiment),
            "exp.yaml:9: data.val: no file matches '" + dir_.file("val_*.bin") + "'");
}

TEST_F(DataPaths, AMixNamesTheListThatMatchesNothing) {
  const std::string first = touch("a.bin");
  const config::Experiment experiment =
      load("data:\n  dataset: tokens\n  train:\n    - {shards: " + first +
           ", weight: 1}\n    - {shards: " + dir_.file("b_*.bin") +
           ", weight: 2}\n  val: " + first + "\n  seq_len: 4\n");
  EXPECT_EQ(error(experiment),
            "exp.yaml:9: data.train[1].shards: no file matches '" + dir_.file("b_*.bin") + "'");
}

TEST_F(DataPaths, AMissingTokenizerSetOnTheCommandLineNamesTheSet) {
  const std::string train = touch("train_000000.bin");
  const config::Experiment experiment =
      load("data:\n  dataset: tokens\n  train: " + train + "\n  val: " + train + "\n  seq_len: 4\n",
           {"data.tokenizer=no_such_folder/tokenizer.model"});
  EXPECT_EQ(error(experiment),
            "--set data.tokenizer: no_such_folder/tokenizer.model does not exist" + kRelative);
  EXPECT_THROW(check_tokenizer_path(experiment), InputError);
}

TEST_F(DataPaths, AMissingTextPathNamesItsLine) {
  const config::Experiment experiment =
      load("data:\n  dataset: text\n  path: " + dir_.file("none.txt") + "\n  seq_len: 4\n");
  EXPECT_EQ(error(experiment),
            "exp.yaml:8: data.path: " + dir_.file("none.txt") + " does not exist");
}

TEST_F(DataPaths, PathsThatAreThereAndBuiltInLocationsPass) {
  const std::string train = touch("train_000000.bin");
  const std::string tokenizer = touch("tokenizer.model");
  EXPECT_EQ(error(load("data:\n  dataset: tokens\n  train: " + dir_.file("train_*.bin") +
                       "\n  val: " + train + "\n  tokenizer: " + tokenizer + "\n  seq_len: 4\n")),
            "(no error)");
  EXPECT_EQ(error(load("data:\n  dataset: text\n  seq_len: 4\n")), "(no error)");
  EXPECT_NO_THROW(check_tokenizer_path(load("data:\n  dataset: text\n  seq_len: 4\n")));
}

}  // namespace
}  // namespace mpipe::job
