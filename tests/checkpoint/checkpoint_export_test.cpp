// Tests for export_checkpoint: a committed step's weights, in shard order, as one weights file.
#include "checkpoint/checkpoint_export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/weights_file.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

// The model's names and shapes are train::check_checkpoint_model's to check (its e2e tests).
const ModelCheck kNoModelCheck = [](const CheckpointTensors&) {};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Stage 0 holds layers 0-1, stage 1 layer 2; each shard ends with optimizer state.
std::vector<NamedTensor> shard(int stage) {
  if (stage == 0) {
    return {{"layers.0.weight", Shape{2, 2}, {1, 2, 3, 4}},
            {"layers.0.bias", Shape{2}, {5, 6}},
            {"layers.1.running_mean", Shape{2}, {7, 8}},
            {"optim.exp_avg.layers.0.weight", Shape{2, 2}, {0, 0, 0, 0}},
            {"optim.exp_avg.layers.0.bias", Shape{2}, {0, 0}}};
  }
  return {{"layers.2.weight", Shape{1, 2}, {9, 10}},
          {"optim.exp_avg.layers.2.weight", Shape{1, 2}, {0, 0}}};
}

// A few of a run's resolved settings (a run's manifest has them all; none here ties).
const std::map<std::string, std::string> kSettings = {
    {"model.loss", "mse"}, {"model.layers[0].type", "linear"}, {"optimizer.lr", "0.1"}};

void commit_step(CheckpointStore& store, int64_t step) {
  const ShardRecord first = store.write_shard(step, 0, views_of(shard(0)));
  const ShardRecord second = store.write_shard(step, 1, views_of(shard(1)));
  // The manifest's keys that the export reads.
  store.commit(step, {{"num_stages", 2}, {"config", "exp.yaml"}, {"settings", kSettings}},
               {first, second});
}

TEST(ExportCheckpoint, WritesTheWeightsInShardOrderWithTheRunsMetadata) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  commit_step(store, 4);
  commit_step(store, 8);
  const std::string out = dir.file("w.safetensors");
  const CheckpointExport done =
      export_checkpoint(store.run_dir(), std::nullopt, out, kNoModelCheck);
  EXPECT_EQ(done.step, 8);
  EXPECT_EQ(done.num_tensors, 4);

  // What the end-of-run export writes: the weights alone, in order, with the weights metadata.
  std::vector<NamedTensor> weights = shard(0);
  weights.resize(3);
  weights.push_back(shard(1)[0]);
  const std::string expected = dir.file("expected.safetensors");
  const FileDigest digest = write_safetensors(
      expected, weights, weights_file_metadata("exp.yaml", kSettings, std::nullopt));
  EXPECT_EQ(read_bytes(out), read_bytes(expected));
  EXPECT_EQ(done.digest, digest);
}

TEST(ExportCheckpoint, RefusesAStepThatIsNotCommittedAndWritesNothing) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  commit_step(store, 4);
  const std::string out = dir.file("w.safetensors");
  try {
    export_checkpoint(store.run_dir(), 5, out, kNoModelCheck);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              store.run_dir() + ": no committed checkpoint at step 5 (committed: 4)");
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace mpipe::checkpoint
