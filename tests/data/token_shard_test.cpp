// Tests for TokenShard and write_token_shard: the llm.c shard format read back and every
// damaged header refused with one line naming the file.
#include "data/token_shard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "data/test_files.h"
#include "data/token_shard_files.h"
#include "data/token_shard_writer.h"
#include "support/input_error_of.h"

namespace mpipe::data {
namespace {

using mpipe::testing::input_error_of;
using testing::counting;
using testing::shard_bytes;
using testing::TempDir;
using testing::write_bytes;

std::vector<float> all_tokens(const TokenShard& shard) {
  std::vector<float> out(static_cast<size_t>(shard.num_tokens()));
  shard.read_as_floats(0, shard.num_tokens(), int64_t{1} << 24, out.data());
  return out;
}

TEST(TokenShard, ReadsUint16Tokens) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({0, 1, 65535, 7}));
  const TokenShard shard(dir.file("a.bin"));
  EXPECT_EQ(shard.num_tokens(), 4);
  EXPECT_EQ(shard.token_bytes(), 2u);
  EXPECT_EQ(all_tokens(shard), (std::vector<float>{0, 1, 65535, 7}));
}

TEST(TokenShard, ReadsUint32TokensFromAnOffset) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({5, 70000, 16777215, 3}, token_shard::kMagicU32));
  const TokenShard shard(dir.file("a.bin"));
  std::vector<float> out(2);
  shard.read_as_floats(1, 2, int64_t{1} << 24, out.data());
  EXPECT_EQ(out, (std::vector<float>{70000, 16777215}));
}

TEST(TokenShard, AnEmptyShardHasNoTokens) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({}));
  EXPECT_EQ(TokenShard(dir.file("a.bin")).num_tokens(), 0);
}

TEST(TokenShard, WriterPicksUint16WhenTheVocabularyFitsAndUint32Otherwise) {
  const TempDir dir;
  const std::vector<int> ids{0, 3, 65535};
  write_token_shard(dir.file("small.bin"), ids, 65536);
  const TokenShard small(dir.file("small.bin"));
  EXPECT_EQ(small.token_bytes(), 2u);
  EXPECT_EQ(all_tokens(small), (std::vector<float>{0, 3, 65535}));
  const std::vector<int> big_ids{65536, 1};
  write_token_shard(dir.file("big.bin"), big_ids, 65537);
  const TokenShard big(dir.file("big.bin"));
  EXPECT_EQ(big.token_bytes(), 4u);
  EXPECT_EQ(all_tokens(big), (std::vector<float>{65536, 1}));
}

TEST(TokenShard, RefusesAMissingFile) {
  const TempDir dir;
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("none.bin")); }),
            dir.file("none.bin") + ": cannot open: No such file or directory");
}

TEST(TokenShard, RefusesAFileShorterThanTheHeader) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), std::string(100, '\0'));
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("a.bin")); }),
            dir.file("a.bin") + ": 100 bytes, shorter than the 1024-byte token shard header");
}

TEST(TokenShard, RefusesABadMagic) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({1, 2}, 12345));
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("a.bin")); }),
            dir.file("a.bin") +
                ": not a token shard: magic 12345, expected 20240520 (uint16 tokens) or 20240801 "
                "(uint32 tokens)");
}

TEST(TokenShard, RefusesAnotherVersion) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({1, 2}, token_shard::kMagicU16, 2));
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("a.bin")); }),
            dir.file("a.bin") + ": token shard version 2, expected 1");
}

TEST(TokenShard, RefusesACountThatDisagreesWithTheFileSize) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({1, 2, 3}, token_shard::kMagicU16, 1, 4));
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("a.bin")); }),
            dir.file("a.bin") +
                ": token count 4 in the header needs 8 bytes after it, the file "
                "has 6");
  write_bytes(dir.file("b.bin"), shard_bytes({1, 2, 3}, token_shard::kMagicU32, 1, 2));
  EXPECT_EQ(input_error_of([&] { TokenShard shard(dir.file("b.bin")); }),
            dir.file("b.bin") +
                ": token count 2 in the header needs 8 bytes after it, the file "
                "has 12");
}

TEST(TokenShard, ScanFindsTheFirstTokenAtOrAboveTheVocabularyAcrossChunks) {
  const TempDir dir;
  // More than one 2^20-token scan chunk; the bad token sits in the second.
  std::vector<uint32_t> tokens = counting(0, (1u << 20) + 100, 1000);
  tokens[(1u << 20) + 42] = 1000;
  write_bytes(dir.file("a.bin"), shard_bytes(tokens));
  const TokenShard shard(dir.file("a.bin"));
  const int64_t all = shard.num_tokens();
  EXPECT_NO_THROW(shard.check_ids_below(1001, "data.vocab", 0, all));
  EXPECT_EQ(input_error_of([&] { shard.check_ids_below(1000, "data.vocab", 0, all); }),
            dir.file("a.bin") +
                ": token 1048618 is 1000, not below the vocabulary of 1000 "
                "(data.vocab)");
  // A range scans only its own tokens: those before and after the bad one pass.
  EXPECT_NO_THROW(shard.check_ids_below(1000, "data.vocab", 0, (1 << 20) + 42));
  EXPECT_NO_THROW(shard.check_ids_below(1000, "data.vocab", (1 << 20) + 43, 57));
  EXPECT_EQ(input_error_of([&] { shard.check_ids_below(1000, "data.vocab", (1 << 20) + 40, 5); }),
            dir.file("a.bin") +
                ": token 1048618 is 1000, not below the vocabulary of 1000 "
                "(data.vocab)");
}

// Sets the modification time of `path` an hour back, so that a rewrite in the same tick of the
// file system's clock still changes it.
void backdate(const std::string& path) {
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  const timespec times[2] = {info.st_atim, {info.st_mtim.tv_sec - 3600, info.st_mtim.tv_nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(TokenShard, AShardTruncatedAfterOpeningIsAnInputErrorNamingItNotASignal) {
  // Read through a map, the truncated pages killed the process with SIGBUS.
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes(counting(0, 4096)));
  const TokenShard shard(dir.file("a.bin"));
  ASSERT_EQ(::truncate(dir.file("a.bin").c_str(), 3000), 0);
  std::vector<float> out(16);
  EXPECT_EQ(input_error_of([&] { shard.read_as_floats(4000, 16, 65536, out.data()); }),
            dir.file("a.bin") +
                ": changed during the run (9216 bytes when the run opened it, 3000 now); a run's "
                "token shards must stay as they are until it ends");
  // Within what is left, too.
  EXPECT_EQ(input_error_of([&] { shard.read_as_floats(0, 16, 65536, out.data()); }),
            dir.file("a.bin") +
                ": changed during the run (9216 bytes when the run opened it, 3000 now); a run's "
                "token shards must stay as they are until it ends");
}

TEST(TokenShard, AShardRewrittenInPlaceAtItsSizeIsAnInputError) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes(counting(0, 64)));
  backdate(dir.file("a.bin"));
  const TokenShard shard(dir.file("a.bin"));
  std::vector<float> out(4);
  shard.read_as_floats(0, 4, 65536, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 3}));
  write_bytes(dir.file("a.bin"), shard_bytes(counting(7, 64)));  // same size, other tokens
  EXPECT_EQ(input_error_of([&] { shard.read_as_floats(0, 4, 65536, out.data()); }),
            dir.file("a.bin") +
                ": changed during the run (modified after the run opened it); a run's token "
                "shards must stay as they are until it ends");
}

TEST(TokenShard, ATokenNotBelowTheVocabularyIsAnInputErrorOnRead) {
  const TempDir dir;
  write_bytes(dir.file("a.bin"), shard_bytes({1, 2, 999, 3}));
  const TokenShard shard(dir.file("a.bin"));
  std::vector<float> out(4);
  EXPECT_EQ(input_error_of([&] { shard.read_as_floats(0, 4, 999, out.data()); }),
            dir.file("a.bin") +
                ": token 2 is 999, not below the vocabulary of 999 as at start-up: the shard "
                "changed during the run");
}

}  // namespace
}  // namespace mpipe::data
