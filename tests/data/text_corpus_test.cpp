// Tests for the byte-level text corpus: file listing, windows, splits and entropy.
#include "data/text_corpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "test_files.h"

namespace mpipe::data {
namespace {

using testing::TempDir;
using testing::write_plain;

DataConfig text_config(const std::string& path, int64_t seq_len, double val_fraction) {
  DataConfig config;
  config.kind = DatasetKind::kText;
  config.path = path;
  config.seq_len = seq_len;
  config.val_fraction = val_fraction;
  return config;
}

std::string repeat(const std::string& unit, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += unit;
  return out;
}

TEST(TextCorpus, ExampleIIsTheWindowAtByteIAndTargetsAreShiftedByOne) {
  TempDir dir;
  write_plain(dir.file("a.txt"), "0123456789abcdefghij");  // 20 bytes: 16 train, 4 validation
  const TextCorpus corpus(text_config(dir.file("a.txt"), 3, 0.2));
  EXPECT_EQ(corpus.input_shape(), (Shape{3}));
  EXPECT_EQ(corpus.target_shape(), (Shape{3}));
  EXPECT_EQ(corpus.num_classes(), 256);
  const std::vector<int64_t> indices{0, 5};
  const Tensor x = corpus.inputs(Split::kTrain, indices, 0, 0);
  const Tensor y = corpus.targets(Split::kTrain, indices);
  ASSERT_EQ(x.shape(), (Shape{2, 3}));
  EXPECT_EQ(decode_text(x.span()), "012567");
  EXPECT_EQ(decode_text(y.span()), "123678");
  EXPECT_EQ(x[0], static_cast<float>('0'));
}

TEST(TextCorpus, SplitSizesCountEveryFullWindow) {
  TempDir dir;
  write_plain(dir.file("a.txt"), "0123456789abcdefghij");
  const TextCorpus corpus(text_config(dir.file("a.txt"), 3, 0.2));
  EXPECT_EQ(corpus.text(Split::kTrain), "0123456789abcdef");
  EXPECT_EQ(corpus.text(Split::kTest), "ghij");
  EXPECT_EQ(corpus.size(Split::kTrain), 13);
  EXPECT_EQ(corpus.size(Split::kTest), 1);
  // The last window of each split ends at the split's last byte.
  const std::vector<int64_t> last_train{12}, last_test{0};
  EXPECT_EQ(decode_text(corpus.targets(Split::kTrain, last_train).span()), "def");
  EXPECT_EQ(decode_text(corpus.inputs(Split::kTest, last_test, 0, 0).span()), "ghi");
  EXPECT_EQ(decode_text(corpus.targets(Split::kTest, last_test).span()), "hij");
  EXPECT_THROW(corpus.inputs(Split::kTest, std::vector<int64_t>{1}, 0, 0), Error);
}

TEST(TextCorpus, ValidationWindowsDoNotOverlapSoEachByteIsPredictedOnce) {
  TempDir dir;
  // 40 bytes: 30 train, 10 validation ("0123456789"); windows of 3 at bytes 0, 3 and 6.
  write_plain(dir.file("a.txt"), repeat("x", 30) + "0123456789");
  const TextCorpus corpus(text_config(dir.file("a.txt"), 3, 0.25));
  ASSERT_EQ(corpus.text(Split::kTest), "0123456789");
  EXPECT_EQ(corpus.size(Split::kTest), 3);
  EXPECT_EQ(corpus.size(Split::kTrain), 27);  // training windows still start at every byte
  const std::vector<int64_t> all{0, 1, 2};
  EXPECT_EQ(decode_text(corpus.inputs(Split::kTest, all, 0, 0).span()), "012345678");
  EXPECT_EQ(decode_text(corpus.targets(Split::kTest, all).span()), "123456789");
  EXPECT_THROW(corpus.inputs(Split::kTest, std::vector<int64_t>{3}, 0, 0), Error);
}

TEST(TextCorpus, SplitShorterThanAWindowIsAnInputError) {
  TempDir dir;
  write_plain(dir.file("a.txt"), "0123456789");
  EXPECT_THROW(TextCorpus(text_config(dir.file("a.txt"), 3, 0.2)), InputError);
}

TEST(TextCorpus, MissingPathIsAnInputErrorNamingIt) {
  TempDir dir;
  try {
    TextCorpus corpus(text_config(dir.file("absent"), 3, 0.2));
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), dir.file("absent") + ": cannot open");
  }
}

TEST(TextCorpus, CharacterDeviceIsRefusedBeforeItIsRead) {
  // /dev/zero never ends: read to its end, it filled the machine's memory.
  try {
    TextCorpus corpus(text_config("/dev/zero", 3, 0.2));
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/zero: data.path: must be a regular file or a folder of them, not a "
                 "character device");
  }
}

TEST(TextCorpus, FifoIsRefusedWithoutOpeningIt) {
  // Opening a FIFO blocks until a writer comes: the test would hang, not fail, on old code.
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    TextCorpus corpus(text_config(fifo, 3, 0.2));
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              fifo + ": data.path: must be a regular file or a folder of them, not a FIFO");
  }
}

TEST(TextCorpus, BinaryFileIsRefusedNamingIt) {
  TempDir dir;
  write_plain(dir.file("a"), "AAAABBBBCCCC");
  write_plain(dir.file("b"), std::string("text, then \0 a NUL", 19));
  try {
    TextCorpus corpus(text_config(dir.path().string(), 2, 0.25));
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(
        std::string(error.what()),
        dir.file("b") +
            ": a binary file, not text (a NUL byte at offset 11); data.path takes text files");
  }
}

TEST(TextCorpus, FolderSkipsFifosInIt) {
  TempDir dir;
  write_plain(dir.file("a"), "AAAABBBBCCCC");
  ASSERT_EQ(::mkfifo(dir.file("b").c_str(), 0600), 0);
  EXPECT_EQ(corpus_files(dir.path().string(), kTextPathKey),
            (std::vector<std::string>{dir.file("a")}));
  const TextCorpus corpus(text_config(dir.path().string(), 2, 0.25));
  EXPECT_EQ(corpus.text(Split::kTrain), "AAAABBBBC");
}

TEST(TextCorpus, FolderIsReadRecursivelyInSortedOrderSkippingDatFilesAndLinks) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "sub");
  write_plain(dir.file("b"), "BBBB");
  write_plain(dir.file("a"), "AAAA");
  write_plain(dir.file("a.dat"), "index");
  write_plain(dir.file("sub/c"), "CCCC");
  std::filesystem::create_symlink(dir.file("a"), dir.file("a.u8"));
  const auto files = corpus_files(dir.path().string(), kTextPathKey);
  EXPECT_EQ(files, (std::vector<std::string>{dir.file("a"), dir.file("b"), dir.file("sub/c")}));
  const TextCorpus corpus(text_config(dir.path().string(), 2, 0.25));
  EXPECT_EQ(corpus.text(Split::kTrain), "AAAABBBBC");
  EXPECT_EQ(corpus.text(Split::kTest), "CCC");
}

TEST(TextCorpus, UnigramEntropyOfKnownText) {
  TempDir dir;
  // Train: 300 bytes, a b c d equally often -> 2 bits; validation: only 'z' -> 0 bits.
  write_plain(dir.file("t"), repeat("abcd", 75) + repeat("z", 100));
  const TextCorpus corpus(text_config(dir.file("t"), 4, 0.25));
  EXPECT_DOUBLE_EQ(corpus.unigram_entropy_bits(Split::kTrain), 2.0);
  EXPECT_DOUBLE_EQ(corpus.unigram_entropy_bits(Split::kTest), 0.0);
}

TEST(TextCodec, EncodeDecodeRoundTripsAllBytes) {
  std::string all(256, '\0');
  for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<char>(i);
  const std::vector<float> tokens = encode_text(all);
  EXPECT_EQ(tokens[255], 255.0f);
  EXPECT_EQ(decode_text(tokens), all);
  const std::vector<float> odd{-3.0f, 65.2f, 300.0f};
  EXPECT_EQ(decode_text(odd), std::string("\0A\xff", 3));
}

TEST(TextCorpusFortunes, DefaultCorpusLoadsWithoutIndexFilesOrDuplicates) {
  if (!std::filesystem::exists(kDefaultTextPath)) GTEST_SKIP() << kDefaultTextPath << " missing";
  for (const std::string& file : corpus_files(kDefaultTextPath, kTextPathKey)) {
    EXPECT_NE(std::filesystem::path(file).extension(), ".dat") << file;
    EXPECT_FALSE(std::filesystem::is_symlink(file)) << file;
  }
  const TextCorpus corpus(text_config("", 64, 0.05));
  const auto total =
      static_cast<int64_t>(corpus.text(Split::kTrain).size() + corpus.text(Split::kTest).size());
  EXPECT_GT(total, 1'000'000);
  EXPECT_NEAR(static_cast<double>(corpus.text(Split::kTest).size()) / total, 0.05, 1e-3);
  const double entropy = corpus.unigram_entropy_bits(Split::kTrain);
  EXPECT_GT(entropy, 3.5);
  EXPECT_LT(entropy, 6.0);
}

}  // namespace
}  // namespace mpipe::data
