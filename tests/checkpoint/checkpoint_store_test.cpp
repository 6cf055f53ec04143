// Tests for CheckpointStore: layout, commit by meta.json with shard records and its own checksum,
// pruning, verified merged reads and their errors.
#include "checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "support/input_error_of.h"
#include "support/temp_dir.h"

namespace mpipe::checkpoint {
namespace {

namespace fs = std::filesystem;

std::vector<NamedTensor> stage_tensors(int stage, float value) {
  return {{fmt::format("layers.{}.weight", 2 * stage), Shape{2}, {value, value}},
          {fmt::format("layers.{}.bias", 2 * stage + 1), Shape{1}, {-value}}};
}

// Writes both shards of a two-stage checkpoint and commits it with their records.
void save_two_stage(CheckpointStore& store, int64_t step) {
  const ShardRecord first =
      store.write_shard(step, 0, views_of(stage_tensors(0, static_cast<float>(step))));
  const ShardRecord second =
      store.write_shard(step, 1, views_of(stage_tensors(1, static_cast<float>(step))));
  store.commit(step, {{"num_stages", 2}, {"seed", 7}, {"config", "exp.yaml"}}, {first, second});
}

std::string read_all_error(const CheckpointStore& store, int64_t step) {
  try {
    store.read_all(step);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Flips one bit of the byte `from_end` bytes before the end of the file (tensor data).
void flip_bit(const std::string& path, std::streamoff from_end) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(-from_end, std::ios::end);
  char byte = 0;
  file.get(byte);
  file.seekp(-from_end, std::ios::end);
  file.put(static_cast<char>(byte ^ 0x10));
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void write_json(const std::string& path, const nlohmann::json& value) {
  std::ofstream(path) << value.dump(2);
}

// Writes an edited meta.json with its manifest checksum recomputed, as one that passes that
// check but must fail a later one.
void write_sealed_json(const std::string& path, nlohmann::json meta) {
  meta[kManifestChecksumKey] = manifest_checksum(meta);
  write_json(path, meta);
}

constexpr const char* kNoIntact = "; no earlier committed checkpoint is intact";

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

// A run directory removed during the run (a node's scratch wiped) took its checkpoints along:
// the next write says so instead of making the directory again and going on.
TEST(CheckpointStore, WriteRefusesARunDirectoryRemovedSinceTheFirstWrite) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 2);
  save_two_stage(store, 10);
  fs::remove_all(dir.file("run"));
  try {
    store.write_shard(20, 0, views_of(stage_tensors(0, 1.f)));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("run") +
                                         ": the run directory was removed or replaced during the "
                                         "run, and the checkpoints it held on this disk with it");
  }
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

// ... and one replaced by another directory of the same name (moved away, made again), seen
// since the store was made.
TEST(CheckpointStore, WriteRefusesARunDirectoryReplacedSinceTheStoreWasMade) {
  testing::TempDir dir;
  fs::create_directories(dir.file("run"));
  CheckpointStore store(dir.file("run"), 2);
  fs::rename(dir.file("run"), dir.file("moved"));
  fs::create_directories(dir.file("run"));
  EXPECT_THROW(store.write_shard(10, 0, views_of(stage_tensors(0, 1.f))), Error);
  EXPECT_TRUE(fs::is_empty(dir.file("run")));
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
  store.write_shard(20, 0, views_of(stage_tensors(0, 1.f)));
  store.write_shard(20, 1, views_of(stage_tensors(1, 1.f)));
  EXPECT_EQ(store.latest_committed(), 10);
  EXPECT_TRUE(fs::exists(store.step_dir(20)));
}

TEST(CheckpointStore, CommitRemovesIncompleteFoldersOlderThanItself) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(15, 0, views_of(stage_tensors(0, 1.f)));
  save_two_stage(store, 20);
  EXPECT_FALSE(fs::exists(store.step_dir(15)));
  EXPECT_EQ(store.committed_steps(), std::vector<int64_t>{20});
}

TEST(CheckpointStore, CommitRefusesWhileAShardIsUnreported) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  const ShardRecord first = store.write_shard(10, 0, views_of(stage_tensors(0, 1.f)));
  store.write_shard(10, 1, views_of(stage_tensors(1, 1.f)));  // written, but its report never came
  try {
    store.commit(10, {{"num_stages", 2}}, {first});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              store.step_dir(10) + ": cannot commit step 10: 1 of 2 shards reported written");
  }
  EXPECT_FALSE(fs::exists(store.meta_path(10)));
  EXPECT_EQ(store.latest_committed(), std::nullopt);
}

TEST(CheckpointStore, CommitRefusesTwoReportsForOneStage) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  const ShardRecord first = store.write_shard(10, 0, views_of(stage_tensors(0, 1.f)));
  EXPECT_THROW(store.commit(10, {{"num_stages", 2}}, {first, first}), Error);
  EXPECT_FALSE(fs::exists(store.meta_path(10)));
}

TEST(CheckpointStore, CommitTrustsTheReportsWithoutLookingForOtherRanksFiles) {
  // Another rank's shard may be on its own node-local disk: rank 0 commits what was reported.
  testing::TempDir dir;
  CheckpointStore elsewhere(dir.file("node1"), 3);
  CheckpointStore here(dir.file("node0"), 3);
  const ShardRecord first = here.write_shard(10, 0, views_of(stage_tensors(0, 1.f)));
  const ShardRecord second = elsewhere.write_shard(10, 1, views_of(stage_tensors(1, 1.f)));
  here.commit(10, {{"num_stages", 2}}, {second, first});
  EXPECT_EQ(here.latest_committed(), 10);
  EXPECT_FALSE(fs::exists(here.shard_path(10, 1)));
}

TEST(CheckpointStore, MetaRecordsEachShardsFileSizeCrc32AndStep) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 20);
  const nlohmann::json shards = store.read_meta(20)["shards"];
  ASSERT_EQ(shards.size(), 2u);
  for (int stage = 0; stage < 2; ++stage) {
    const FileDigest digest = digest_file(store.shard_path(20, stage));
    EXPECT_EQ(shards[static_cast<size_t>(stage)],
              (nlohmann::json{{"file", fmt::format("stage_{}.safetensors", stage)},
                              {"stage", stage},
                              {"step", 20},
                              {"size", digest.size},
                              {"crc32", crc32_hex(digest.crc32)}}));
  }
}

TEST(CheckpointStore, FailedCommitKeepsEveryEarlierCheckpoint) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 1);
  save_two_stage(store, 10);
  const ShardRecord first = store.write_shard(20, 0, views_of(stage_tensors(0, 2.f)));
  const ShardRecord second = store.write_shard(20, 1, views_of(stage_tensors(1, 2.f)));
  fs::create_directories(store.meta_path(20) + "/blocked");  // meta.json cannot be written
  EXPECT_THROW(store.commit(20, {{"num_stages", 2}}, {first, second}), Error);
  EXPECT_EQ(store.committed_steps(), std::vector<int64_t>{10});
  EXPECT_EQ(store.read_all(10).at(0).values, (std::vector<float>{10.f, 10.f}));
}

TEST(CheckpointStore, ReadIntoFillsOnlyTheTensorsTheDestinationTakes) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  std::vector<float> bias(1, 0.f);
  std::vector<std::string> offered;
  store.read_into(10, [&](const std::string& name, const Shape& shape) {
    offered.push_back(name);
    return name == "layers.3.bias" && shape == Shape{1} ? std::optional<std::span<float>>(bias)
                                                        : std::nullopt;
  });
  EXPECT_EQ(bias, std::vector<float>{-10.f});
  EXPECT_EQ(offered, (std::vector<std::string>{"layers.0.weight", "layers.1.bias",
                                               "layers.2.weight", "layers.3.bias"}));
}

TEST(CheckpointStore, ReadIntoVerifiesEveryShardBeforeFillingAnything) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  flip_bit(store.shard_path(10, 1), 1);
  bool offered = false;
  try {
    store.read_into(10, [&offered](const std::string&, const Shape&) {
      offered = true;
      return std::optional<std::span<float>>();
    });
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), read_all_error(store, 10));
    EXPECT_TRUE(std::string(e.what()).starts_with(store.shard_path(10, 1) + ": checksum mismatch"));
  }
  EXPECT_FALSE(offered);  // stage 0 is intact, but nothing was read into place
}

TEST(CheckpointStore, ReadIntoPassesTheDestinationsOwnErrorThroughWithoutAHint) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  try {
    store.read_into(
        10, [](const std::string& name, const Shape&) -> std::optional<std::span<float>> {
          throw InputError(fmt::format("model.yaml: tensor {} has another shape", name));
        });
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "model.yaml: tensor layers.0.weight has another shape");
  }
}

TEST(CheckpointStore, DiscardShardRemovesItAndTheFolderOnceEmpty) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(20, 0, views_of(stage_tensors(0, 2.f)));
  store.write_shard(20, 1, views_of(stage_tensors(1, 2.f)));
  store.discard_shard(20, 1);
  EXPECT_FALSE(fs::exists(store.shard_path(20, 1)));
  EXPECT_TRUE(fs::exists(store.shard_path(20, 0)));
  store.discard_shard(20, 0);
  EXPECT_FALSE(fs::exists(store.step_dir(20)));
}

TEST(CheckpointStore, IntactShardsAreThoseMatchingTheirRecords) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 20);
  const nlohmann::json meta = store.read_meta(20);
  EXPECT_EQ(store.intact_shards(20, meta), (std::vector<int>{0, 1}));
  flip_bit(store.shard_path(20, 0), 2);  // a shard left from another attempt at the step, say
  EXPECT_EQ(store.intact_shards(20, meta), (std::vector<int>{1}));
  fs::remove(store.shard_path(20, 1));  // a shard this host never held
  EXPECT_TRUE(store.intact_shards(20, meta).empty());
}

TEST(CheckpointStore, WriteCommitLeavesPruningToPruneAndUncommitUndoesIt) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 1);
  save_two_stage(store, 10);
  const ShardRecord first = store.write_shard(20, 0, views_of(stage_tensors(0, 2.f)));
  const ShardRecord second = store.write_shard(20, 1, views_of(stage_tensors(1, 2.f)));
  store.write_commit(20, {{"num_stages", 2}}, {first, second});
  EXPECT_EQ(store.committed_steps(), (std::vector<int64_t>{10, 20}));  // not pruned yet
  store.uncommit(20);  // another host failed to commit it
  EXPECT_EQ(store.committed_steps(), (std::vector<int64_t>{10}));
  store.write_commit(20, {{"num_stages", 2}}, {first, second});
  store.prune(20);
  EXPECT_EQ(store.committed_steps(), (std::vector<int64_t>{20}));
}

TEST(CheckpointStore, BitFlipInTensorDataIsAChecksumMismatchNamingTheIntactCheckpoint) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  save_two_stage(store, 20);
  const std::string path = store.shard_path(20, 1);
  const FileDigest before = digest_file(path);
  flip_bit(path, 2);
  const FileDigest after = digest_file(path);
  ASSERT_NE(after.crc32, before.crc32);
  EXPECT_EQ(read_all_error(store, 20),
            fmt::format("{}: checksum mismatch (crc32 {}, meta.json says {}); the newest intact "
                        "checkpoint is step 10 ({}): remove step_00000020 to resume from it",
                        path, crc32_hex(after.crc32), crc32_hex(before.crc32), store.step_dir(10)));
}

TEST(CheckpointStore, ReadForAnExportAdvisesExportingTheIntactCheckpoint) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  save_two_stage(store, 20);
  fs::copy_file(store.shard_path(10, 1), store.shard_path(20, 1),
                fs::copy_options::overwrite_existing);
  const auto ignore = [](const std::string&, const Shape&) {
    return std::optional<std::span<float>>();
  };
  EXPECT_EQ(
      mpipe::testing::input_error_of([&] { store.read_into(20, ignore, CheckpointUse::kExport); }),
      store.shard_path(20, 1) +
          ": holds step 10, meta.json says step 20; the newest intact checkpoint is step 10 (" +
          store.step_dir(10) + "): export it with --step 10");
}

TEST(CheckpointStore, ShardCopiedFromAnotherStepIsNamedAsSuch) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  save_two_stage(store, 20);
  fs::copy_file(store.shard_path(10, 1), store.shard_path(20, 1),
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(
      read_all_error(store, 20),
      store.shard_path(20, 1) +
          ": holds step 10, meta.json says step 20; the newest intact checkpoint is step 10 (" +
          store.step_dir(10) + "): remove step_00000020 to resume from it");
}

TEST(CheckpointStore, ShardCopiedFromAnotherStageIsNamedAsSuch) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  fs::copy_file(store.shard_path(10, 0), store.shard_path(10, 1),
                fs::copy_options::overwrite_existing);
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 1) + ": holds stage 0, meta.json says stage 1" + kNoIntact);
}

TEST(CheckpointStore, TruncatedShardIsASizeMismatch) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const std::string path = store.shard_path(10, 0);
  const uintmax_t size = fs::file_size(path);
  fs::resize_file(path, size - 4);
  EXPECT_EQ(read_all_error(store, 10),
            fmt::format("{}: size mismatch ({} bytes, meta.json says {}){}", path, size - 4, size,
                        kNoIntact));
}

TEST(CheckpointStore, HintSkipsBrokenEarlierCheckpointsAndListsEveryNewerOne) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 5);
  for (int64_t step : {10, 20, 30, 40}) save_two_stage(store, step);
  flip_bit(store.shard_path(40, 0), 1);
  flip_bit(store.shard_path(30, 1), 1);
  const std::string message = read_all_error(store, 40);
  EXPECT_TRUE(message.ends_with("; the newest intact checkpoint is step 20 (" + store.step_dir(20) +
                                "): remove step_00000030, step_00000040 to resume from it"))
      << message;
}

TEST(CheckpointStore, HintSaysWhenNoEarlierCheckpointIsIntact) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  save_two_stage(store, 20);
  flip_bit(store.shard_path(10, 0), 1);
  flip_bit(store.shard_path(20, 0), 1);
  EXPECT_TRUE(read_all_error(store, 20).ends_with(kNoIntact));
}

TEST(CheckpointStore, VerifyAcceptsAnIntactCheckpointAndRefusesADamagedOne) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  EXPECT_NO_THROW(store.verify(10));
  flip_bit(store.shard_path(10, 1), 1);
  EXPECT_THROW(store.verify(10), InputError);
}

TEST(CheckpointStore, MetaWithoutARequiredKeyIsRefusedNamingTheKey) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const nlohmann::json meta = read_json(store.meta_path(10));
  for (const char* key : {"shards", "manifest_crc32", "num_stages", "step", "time"}) {
    nlohmann::json edited = meta;
    edited.erase(key);
    write_json(store.meta_path(10), edited);
    EXPECT_EQ(read_all_error(store, 10),
              fmt::format("{}: missing key '{}'{}", store.meta_path(10), key, kNoIntact));
    if (key == std::string(kManifestChecksumKey)) continue;
    write_sealed_json(store.meta_path(10), edited);  // no checksum to blame either
    EXPECT_EQ(read_all_error(store, 10),
              fmt::format("{}: missing key '{}'{}", store.meta_path(10), key, kNoIntact));
  }
}

TEST(CheckpointStore, ManifestChecksumIsTheCrc32OfTheCompactJsonWithoutIt) {
  // zlib.crc32(b'{"a":"x","b":1}') in Python
  EXPECT_EQ(manifest_checksum({{"b", 1}, {"a", "x"}, {kManifestChecksumKey, "anything"}}),
            "1ffe9fd7");
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const nlohmann::json meta = read_json(store.meta_path(10));
  EXPECT_EQ(meta.at(kManifestChecksumKey), manifest_checksum(meta));
}

TEST(CheckpointStore, AnyEditOfMetaIsAManifestChecksumMismatch) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const nlohmann::json meta = read_json(store.meta_path(10));
  const auto expected = [&](const nlohmann::json& edited) {
    return fmt::format("{}: manifest checksum mismatch (crc32 {}, manifest_crc32 says {}){}",
                       store.meta_path(10), manifest_checksum(edited),
                       meta[kManifestChecksumKey].get<std::string>(), kNoIntact);
  };
  nlohmann::json edited = meta;
  edited["seed"] = 8;
  write_json(store.meta_path(10), edited);
  EXPECT_EQ(read_all_error(store, 10), expected(edited));
  edited = meta;
  edited["added"] = true;
  write_json(store.meta_path(10), edited);
  EXPECT_EQ(read_all_error(store, 10), expected(edited));
  write_json(store.meta_path(10), meta);  // the layout of the file is not part of the checksum
  EXPECT_EQ(store.read_all(10).size(), 4u);
}

TEST(CheckpointStore, EveryKeyInAShardsMetadataMustAgreeWithMeta) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  const std::map<std::string, std::string> held = {{"optimizer_steps", "9"}};
  const ShardRecord first = store.write_shard(10, 0, views_of(stage_tensors(0, 1.f)), held);
  const ShardRecord second = store.write_shard(10, 1, views_of(stage_tensors(1, 1.f)), held);
  store.commit(10, {{"num_stages", 2}, {"optimizer_steps", 9}}, {first, second});
  EXPECT_EQ(store.read_all(10).size(), 4u);
  nlohmann::json meta = read_json(store.meta_path(10));
  meta["optimizer_steps"] = 10;
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 0) +
                ": holds optimizer_steps 9, meta.json says optimizer_steps 10" + kNoIntact);
  meta.erase("optimizer_steps");
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 0) +
                ": holds optimizer_steps 9, meta.json has no optimizer_steps" + kNoIntact);
}

TEST(CheckpointStore, NonFiniteValueIsRefusedThoughItsChecksumMatches) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  std::vector<NamedTensor> tensors = stage_tensors(1, 2.f);
  tensors[0].values[1] = std::numeric_limits<float>::quiet_NaN();
  const ShardRecord first = store.write_shard(20, 0, views_of(stage_tensors(0, 2.f)));
  const ShardRecord second = store.write_shard(20, 1, views_of(tensors));
  store.commit(20, {{"num_stages", 2}}, {first, second});
  EXPECT_EQ(read_all_error(store, 20),
            store.shard_path(20, 1) +
                ": tensor 'layers.2.weight' holds a non-finite value (nan) at index 1; the newest "
                "intact checkpoint is step 10 (" +
                store.step_dir(10) + "): remove step_00000020 to resume from it");
  EXPECT_THROW(store.verify(20), InputError);  // so no later hint calls it intact
}

TEST(CheckpointStore, MalformedShardListIsRefusedNamingMetaJson) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  nlohmann::json meta = read_json(store.meta_path(10));
  meta["shards"][1]["crc32"] = "xyz";
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_EQ(read_all_error(store, 10),
            store.meta_path(10) +
                R"(: shards[1] must be {"file": "stage_1.safetensors", "stage": 1, "step": )"
                R"(<integer>, "size": <bytes>, "crc32": <8 hex digits>})" +
                kNoIntact);
  meta["shards"][1]["crc32"] = crc32_hex(0);
  meta["shards"][1]["stage"] = "1";  // a string
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_TRUE(read_all_error(store, 10).starts_with(store.meta_path(10) + ": shards[1] must be"));
  meta["shards"][1].erase("size");
  meta["shards"][1]["stage"] = 1;
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_TRUE(read_all_error(store, 10).starts_with(store.meta_path(10) + ": shards[1] must be"));
  meta["shards"].erase(1);
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_EQ(read_all_error(store, 10),
            store.meta_path(10) + ": shards must be a list of 2 entries (num_stages)" + kNoIntact);
}

TEST(CheckpointStore, RewritingAStepUncommitsItUntilCommittedAgain) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  const ShardRecord first = store.write_shard(10, 0, views_of(stage_tensors(0, 5.f)));
  EXPECT_EQ(store.latest_committed(), std::nullopt);
  const ShardRecord second = store.write_shard(10, 1, views_of(stage_tensors(1, 5.f)));
  store.commit(10, {{"num_stages", 2}}, {first, second});
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
            store.shard_path(10, 1) + ": missing (meta.json says 2 stages)" + kNoIntact);
}

TEST(CheckpointStore, ReadAllNamesACorruptShard) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  save_two_stage(store, 10);
  fs::resize_file(store.shard_path(10, 0), fs::file_size(store.shard_path(10, 0)) - 4);
  // meta.json made to record the damaged shard: the reader's own checks find it
  nlohmann::json meta = read_json(store.meta_path(10));
  const FileDigest damaged = digest_file(store.shard_path(10, 0));
  meta["shards"][0]["size"] = damaged.size;
  meta["shards"][0]["crc32"] = crc32_hex(damaged.crc32);
  write_sealed_json(store.meta_path(10), meta);
  EXPECT_EQ(read_all_error(store, 10), store.shard_path(10, 0) +
                                           ": truncated: header says 12 bytes of data, file has 8" +
                                           kNoIntact);
}

TEST(CheckpointStore, ReadAllRejectsATensorInTwoShards) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  const ShardRecord first = store.write_shard(10, 0, views_of(stage_tensors(0, 1.f)));
  const ShardRecord second = store.write_shard(10, 1, views_of(stage_tensors(0, 2.f)));
  store.commit(10, {{"num_stages", 2}}, {first, second});
  EXPECT_EQ(read_all_error(store, 10),
            store.shard_path(10, 1) + ": tensor 'layers.0.weight' is also in stage_0.safetensors" +
                kNoIntact);
}

TEST(CheckpointStore, ReadingAnUncommittedStepIsAnInputError) {
  testing::TempDir dir;
  CheckpointStore store(dir.file("run"), 3);
  store.write_shard(10, 0, views_of(stage_tensors(0, 1.f)));
  EXPECT_EQ(read_all_error(store, 10),
            store.meta_path(10) + ": missing: step 10 is not a committed checkpoint" + kNoIntact);
}

TEST(CheckpointStore, KeepBelowOneIsRejected) {
  EXPECT_THROW(CheckpointStore("/runs/a", 0), InputError);
}

}  // namespace
}  // namespace mpipe::checkpoint
