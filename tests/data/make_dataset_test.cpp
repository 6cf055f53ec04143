// Tests for the dataset factory.
#include <gtest/gtest.h>

#include "core/error.h"
#include "data/dataset.h"
#include "data/synthetic.h"
#include "data/text_corpus.h"
#include "test_files.h"

namespace mpipe::data {
namespace {

TEST(MakeDataset, BuildsSyntheticDataFromTheSeed) {
  DataConfig config;
  config.kind = DatasetKind::kSynthetic;
  config.num_examples = 64;
  config.features = 8;
  const auto a = make_dataset(config, 1), b = make_dataset(config, 1);
  ASSERT_NE(dynamic_cast<SyntheticDataset*>(a.get()), nullptr);
  EXPECT_EQ(a->input_shape(), (Shape{8}));
  const std::vector<int64_t> indices{3};
  EXPECT_EQ(a->inputs(Split::kTrain, indices, 0, 0)[0], b->inputs(Split::kTrain, indices, 0, 0)[0]);
}

TEST(MakeDataset, BuildsTextCorpus) {
  testing::TempDir dir;
  testing::write_plain(dir.file("t"), std::string(100, 'x'));
  DataConfig config;
  config.kind = DatasetKind::kText;
  config.path = dir.file("t");
  config.seq_len = 8;
  config.val_fraction = 0.2;
  const auto data = make_dataset(config, 0);
  ASSERT_NE(dynamic_cast<TextCorpus*>(data.get()), nullptr);
  EXPECT_EQ(data->size(Split::kTrain), 72);
}

TEST(MakeDataset, FashionMnistFromMissingFolderIsAnInputError) {
  testing::TempDir dir;
  DataConfig config;
  config.kind = DatasetKind::kFashionMnist;
  config.path = dir.file("nowhere");
  EXPECT_THROW(make_dataset(config, 0), InputError);
}

}  // namespace
}  // namespace mpipe::data
