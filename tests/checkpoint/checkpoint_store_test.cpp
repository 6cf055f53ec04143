// Tests for CheckpointStore: layout, commit by meta.json, pruning, merged reads and their errors.
#include "checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

std::vector<NamedTensor> stage_tensors(int stage, float value) {
  return {{fmt::format("layers.{}.weight", 2 * stage), Shape{2}, {value, value}},
          {fmt::format("layers.{}.bias", 2 * stage + 1), Shape{1}, {-value}}};
}

// Writes both shards of a two-stage checkpoint and commits it.
void save_two_stage(CheckpointStore& store, int64_t step) {
  store.write_shard(step, 0, stage_tensors(0, static_cast<float>(step)));
  store.write_shard(step, 1, stage_tensors(1, static_cast<float>(step)));
  store.commit(step, {{"num_stages", 2}, {"seed", 7}, {"config", "exp.yaml"}});
}

std::string read_all_error(const CheckpointStore& store, int64_t step) {
  try {
    store.read_all(step);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointStore, StepFolderIsZeroPaddedUnderCheckpoints) {
  const CheckpointStore store("/runs/a", 3);
  EXPECT_EQ(store.step_dir(120), "/runs/a/checkpoints/step_00000120");
  EXPECT_EQ(store.shard_path(120, 3), "/runs/a/checkpoints/step_00000120/stage_3.safetensors");
  EXPECT_EQ(store.meta_path(120), "/runs/a/checkpoints/step_00000120/meta.json");
}

TEST(CheckpointStore, NewRunDirectoryHasNoCheckpointAndIsNotCreated) {
  testing::TempDir dir;
  const CheckpointStore store(dir.file("run"), 3);
  EXPECT_EQ(store.latest_committed(), std::nullopt);
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

TEST(CheckpointStore, CommitKeepsOnlyTheNewestCheckpoints) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 2);
  for (int64_t step : {10, 20, 30}) save_two_stage(store, step);
  EXPECT_EQ(store.committed_steps(), (std::vector<int64_t>{20, 30}));
  EXPECT_FALSE(fs::exists(store.step_dir(10)));
  EXPECT_EQ(store.latest_committed(), 30);
}

TEST(CheckpointStore, CheckpointWithoutMetaIsIgnored) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  store.write_shard(20, 0, stage_tensors(0, 1.f));
  store.write_shard(20, 1, stage_tensors(1, 1.f));
  EXPECT_EQ(store.latest_committed(), 10);
  EXPECT_TRUE(fs::exists(store.step_dir(20)));
}

TEST(CheckpointStore, CommitRemovesIncompleteFoldersOlderThanItself) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(15, 0, stage_tensors(0, 1.f));
  save_two_stage(store, 20);
  EXPECT_FALSE(fs::exists(store.step_dir(15)));
  EXPECT_EQ(store.committed_steps(), std::vector<int64_t>{20});
}

TEST(CheckpointStore, CommitRefusesWhileAShardIsMissing) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(10, 0, stage_tensors(0, 1.f));
  EXPECT_THROW(store.commit(10, {{"num_stages", 2}}), Error);
  EXPECT_FALSE(fs::exists(store.meta_path(10)));
  EXPECT_EQ(store.latest_committed(), std::nullopt);
}

TEST(CheckpointStore, RewritingAStepUncommitsItUntilCommittedAgain) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  store.write_shard(10, 0, stage_tensors(0, 5.f));
  EXPECT_EQ(store.latest_committed(), std::nullopt);
  store.write_shard(10, 1, stage_tensors(1, 5.f));
  store.commit(10, {{"num_stages", 2}});
  EXPECT_EQ(store.read_all(10).at(0).values, (std::vector<float>{5.f, 5.f}));
}

TEST(CheckpointStore, MetaHoldsStepTimeAndTheCallersFields) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 40);
  const nlohmann::json meta = store.read_meta(40);
  EXPECT_EQ(meta["step"], 40);
  EXPECT_EQ(meta["num_stages"], 2);
  EXPECT_EQ(meta["seed"], 7);
  EXPECT_EQ(meta["config"], "exp.yaml");
  EXPECT_EQ(meta["time"].get<std::string>().size(), std::string("2026-11-22T11:02:03Z").size());
}

TEST(CheckpointStore, ReadAllMergesEveryShardInStageOrder) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const std::vector<NamedTensor> all = store.read_all(10);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].name, "layers.0.weight");
  EXPECT_EQ(all[1].name, "layers.1.bias");
  EXPECT_EQ(all[2].name, "layers.2.weight");
  EXPECT_EQ(all[3].name, "layers.3.bias");
  EXPECT_EQ(all[2].values, (std::vector<float>{10.f, 10.f}));
  EXPECT_EQ(all[3].shape, Shape{1});
}

TEST(CheckpointStore, ReadAllNamesAMissingShard) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  fs::remove(store.shard_path(10, 1));
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 1) + ": missing (meta.json says 2 stages)");
}

TEST(CheckpointStore, ReadAllNamesACorruptShard) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  fs::resize_file(store.shard_path(10, 0), fs::file_size(store.shard_path(10, 0)) - 4);
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 0) + ": truncated: header says 12 bytes of data, file has 8");
}

TEST(CheckpointStore, ReadAllRejectsATensorInTwoShards) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(10, 0, stage_tensors(0, 1.f));
  store.write_shard(10, 1, stage_tensors(0, 2.f));
  store.commit(10, {{"num_stages", 2}});
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 1) + ": tensor 'layers.0.weight' is also in stage_0.safetensors");
}

TEST(CheckpointStore, ReadingAnUncommittedStepIsAnInputError) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(10, 0, stage_tensors(0, 1.f));
  EXPECT_EQ(read_all_error(store, 10),
            store.meta_path(10) + ": missing: step 10 is not a committed checkpoint");
}

TEST(CheckpointStore, KeepBelowOneIsRejected) {
  EXPECT_THROW(CheckpointStore("/runs/a", 0), InputError);
}

}  // namespace
}  // namespace mpipe::checkpoint
