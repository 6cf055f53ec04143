// Tests for the tensors dataset: shapes, classes and splits from the file, and its exact errors.
#include "data/tensor_file.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace mpipe::data {
namespace {

// A tensors config for `path`, the last 40% of the rows for validation.
DataConfig config_for(const std::string& path) {
  DataConfig config;
  config.kind = DatasetKind::kTensors;
  config.path = path;
  config.val_fraction = 0.4;
  return config;
}

// inputs [5, 2, 3] = 0, 1, ..., 29; targets [5] = `labels`.
std::string write_file(testing::TempDir& dir, std::vector<float> labels,
                       std::vector<float> inputs = {}) {
  if (inputs.empty()) {
    for (int i = 0; i < 30; ++i) inputs.push_back(static_cast<float>(i));
  }
  const std::string path = dir.file("d.safetensors");
  checkpoint::write_safetensors(
      path, std::vector<checkpoint::NamedTensor>{
                {"inputs", Shape{5, 2, 3}, inputs},
                {"targets", Shape{static_cast<int64_t>(labels.size())}, labels}});
  return path;
}

std::string error_of(const std::string& path) {
  try {
    TensorFileDataset dataset(config_for(path));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(TensorFileDataset, ShapesClassesAndSplitsComeFromTheFile) {
  testing::TempDir dir;
  const TensorFileDataset dataset(config_for(write_file(dir, {0, 2, 1, 2, 0})));
  EXPECT_EQ(dataset.input_shape(), (Shape{2, 3}));
  EXPECT_EQ(dataset.target_shape(), Shape{});
  EXPECT_EQ(dataset.num_classes(), 3);  // the largest label + 1
  EXPECT_EQ(dataset.input_vocab(), 0);
  EXPECT_EQ(dataset.size(Split::kTrain), 3);
  EXPECT_EQ(dataset.size(Split::kTest), 2);  // the last rows
  const std::vector<int64_t> second = {1};
  const Tensor test_input = dataset.inputs(Split::kTest, second, 0, 0);  // row 4
  EXPECT_EQ(test_input.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(test_input.data()[0], 24.0f);
  EXPECT_EQ(test_input.data()[5], 29.0f);
  const std::vector<int64_t> rows = {2, 0};
  const Tensor train_targets = dataset.targets(Split::kTrain, rows);
  EXPECT_EQ(train_targets.shape(), (Shape{2}));
  EXPECT_EQ(train_targets.data()[0], 1.0f);
  EXPECT_EQ(train_targets.data()[1], 0.0f);
}

TEST(TensorFileDataset, LabelsMustBeIntegersAtLeastZero) {
  testing::TempDir dir;
  std::string path = write_file(dir, {0, 1, 1.5f, 2, 0});
  EXPECT_EQ(error_of(path), path +
                                ": tensor 'targets' holds 1.5 at index 2; class labels must be "
                                "integers in [0, 2^24)");
  path = write_file(dir, {0, 1, 1, -2, 0});
  EXPECT_EQ(error_of(path), path +
                                ": tensor 'targets' holds -2 at index 3; class labels must be "
                                "integers in [0, 2^24)");
}

TEST(TensorFileDataset, RowsMustAgreeAndInputsBeFinite) {
  testing::TempDir dir;
  std::string path = write_file(dir, {0, 1, 1, 2});
  EXPECT_EQ(error_of(path), path + ": tensor 'targets' has 4 rows, 'inputs' has 5");
  std::vector<float> inputs(30, 1.0f);
  inputs[7] = std::numeric_limits<float>::infinity();
  path = write_file(dir, {0, 1, 1, 2, 0}, inputs);
  EXPECT_EQ(error_of(path), path + ": tensor 'inputs' holds a non-finite value (inf) at index 7");
}

}  // namespace
}  // namespace mpipe::data
