// Tests for the Fashion-MNIST dataset on small generated folders and, if installed, real data.
#include "data/fashion_mnist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"
#include "data/image_augment.h"
#include "test_files.h"

namespace mpipe::data {
namespace {

using testing::TempDir;

constexpr int64_t kPixels = 784;

// Three images: image k has pixel i = (i * (k + 1)) % 256, labels 7, 0, 9.
std::vector<uint8_t> three_images() {
  std::vector<uint8_t> images(3 * kPixels);
  for (int64_t k = 0; k < 3; ++k) {
    for (int64_t i = 0; i < kPixels; ++i) {
      images[static_cast<size_t>(k * kPixels + i)] = static_cast<uint8_t>(i * (k + 1) % 256);
    }
  }
  return images;
}

DataConfig config_for(const TempDir& dir) {
  DataConfig config;
  config.kind = DatasetKind::kFashionMnist;
  config.path = dir.path().string();
  return config;
}

std::string load_error(const DataConfig& config) {
  try {
    FashionMnist data(config);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

class SmallFashionMnist : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_fashion_folder(dir_, three_images(), {7, 0, 9}); }
  TempDir dir_;
};

TEST_F(SmallFashionMnist, LoadsBothSplitsWithShapesAndLabels) {
  const FashionMnist data(config_for(dir_));
  EXPECT_EQ(data.size(Split::kTrain), 3);
  EXPECT_EQ(data.size(Split::kTest), 3);
  EXPECT_EQ(data.input_shape(), (Shape{784}));
  EXPECT_EQ(data.target_shape(), Shape{});
  EXPECT_EQ(data.num_classes(), 10);
  const std::vector<int64_t> indices{2, 0};
  const Tensor y = data.targets(Split::kTrain, indices);
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(y[0], 9.0f);
  EXPECT_EQ(y[1], 7.0f);
  EXPECT_EQ(data.inputs(Split::kTest, indices, 0, 0).shape(), (Shape{2, 784}));
}

TEST_F(SmallFashionMnist, UnflattenedInputsAreOneChannelImages) {
  DataConfig config = config_for(dir_);
  config.flatten = false;
  const FashionMnist data(config);
  EXPECT_EQ(data.input_shape(), (Shape{1, 28, 28}));
  const std::vector<int64_t> indices{1};
  EXPECT_EQ(data.inputs(Split::kTrain, indices, 0, 0).shape(), (Shape{1, 1, 28, 28}));
}

TEST_F(SmallFashionMnist, NormalizesWithTrainingMeanAndStd) {
  const FashionMnist data(config_for(dir_));
  const std::vector<int64_t> indices{1};
  const Tensor x = data.inputs(Split::kTest, indices, 0, 0);
  const auto pixels = data.pixels(Split::kTest, 1);
  for (int64_t i = 0; i < kPixels; ++i) {
    const float expected = (pixels[static_cast<size_t>(i)] / 255.0f - 0.2860f) / 0.3530f;
    ASSERT_NEAR(x[i], expected, 1e-6f) << "pixel " << i;
  }
}

TEST_F(SmallFashionMnist, WithoutNormalizationInputsAreScaledToUnitRange) {
  DataConfig config = config_for(dir_);
  config.normalize = false;
  const FashionMnist data(config);
  const std::vector<int64_t> indices{0};
  const Tensor x = data.inputs(Split::kTrain, indices, 0, 0);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_FLOAT_EQ(x[255], 1.0f);
  EXPECT_FLOAT_EQ(x[51], 0.2f);
}

TEST_F(SmallFashionMnist, AugmentationIsReproducibleAndKeyedByExampleAndStep) {
  DataConfig config = config_for(dir_);
  config.normalize = false;
  config.augment_crop_padding = 4;
  config.augment_flip = true;
  const FashionMnist data(config);
  const std::vector<int64_t> indices{0, 2};
  const Tensor a = data.inputs(Split::kTrain, indices, 42, 5);
  const Tensor b = data.inputs(Split::kTrain, indices, 42, 5);
  EXPECT_TRUE(std::equal(a.span().begin(), a.span().end(), b.span().begin()));
  // Row r is example indices[r] augmented by its own draw for (seed 42, step 5).
  for (size_t row = 0; row < indices.size(); ++row) {
    std::vector<uint8_t> expected(kPixels);
    apply_augment(data.pixels(Split::kTrain, indices[row]), 28, 28,
                  draw_augment(42, indices[row], 5, 4, true), expected);
    for (int64_t i = 0; i < kPixels; ++i) {
      ASSERT_FLOAT_EQ(a[static_cast<int64_t>(row) * kPixels + i],
                      expected[static_cast<size_t>(i)] / 255.0f);
    }
  }
  int differing_steps = 0;
  for (int64_t step = 6; step < 16; ++step) {
    const Tensor other = data.inputs(Split::kTrain, indices, 42, step);
    differing_steps += !std::equal(a.span().begin(), a.span().end(), other.span().begin());
  }
  EXPECT_GE(differing_steps, 8);
}

TEST_F(SmallFashionMnist, TestSplitIsNeverAugmented) {
  DataConfig config = config_for(dir_);
  config.augment_crop_padding = 4;
  config.augment_flip = true;
  const FashionMnist augmented(config);
  const FashionMnist plain(config_for(dir_));
  const std::vector<int64_t> indices{0, 1, 2};
  const Tensor a = augmented.inputs(Split::kTest, indices, 1, 3);
  const Tensor b = plain.inputs(Split::kTest, indices, 1, 3);
  EXPECT_TRUE(std::equal(a.span().begin(), a.span().end(), b.span().begin()));
}

// data.task: denoise: the input is the image plus noise keyed by (seed, example, step) in
// training and by (seed, example) in tests; the target is the clean image, with the input's shape.
TEST_F(SmallFashionMnist, DenoisingPairsANoisyImageWithTheCleanOne) {
  DataConfig config = config_for(dir_);
  config.flatten = false;
  config.normalize = false;
  config.task = DataTask::kDenoise;
  config.noise_std = 0.25;
  const FashionMnist data(config);
  EXPECT_EQ(data.target_shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(data.num_classes(), 0);
  EXPECT_EQ(data.schema().classes, 0);
  const std::vector<int64_t> indices{2, 0};
  const Tensor clean = data.targets(Split::kTrain, indices);
  ASSERT_EQ(clean.shape(), (Shape{2, 1, 28, 28}));
  const Tensor noisy = data.inputs(Split::kTrain, indices, 42, 5);
  ASSERT_EQ(noisy.shape(), clean.shape());
  for (size_t row = 0; row < indices.size(); ++row) {
    const auto pixels = data.pixels(Split::kTrain, indices[row]);
    const CounterRng noise(42, RngPurpose::kData, static_cast<uint32_t>(indices[row]), 6);
    for (int64_t i = 0; i < kPixels; ++i) {
      const int64_t at = static_cast<int64_t>(row) * kPixels + i;
      ASSERT_EQ(clean[at], pixels[static_cast<size_t>(i)] / 255.0f);
      ASSERT_EQ(noisy[at], clean[at] + 0.25f * noise.normal(static_cast<uint64_t>(i)));
    }
  }
  // Fresh noise at every training step, the same at every evaluation; each example its own.
  const auto same = [](const Tensor& a, const Tensor& b) {
    return std::equal(a.span().begin(), a.span().end(), b.span().begin());
  };
  EXPECT_FALSE(same(noisy, data.inputs(Split::kTrain, indices, 42, 6)));
  EXPECT_TRUE(same(noisy, data.inputs(Split::kTrain, indices, 42, 5)));
  EXPECT_TRUE(
      same(data.inputs(Split::kTest, indices, 42, 1), data.inputs(Split::kTest, indices, 42, 9)));
  const std::vector<int64_t> first{0};
  const Tensor alone = data.inputs(Split::kTrain, first, 42, 5);
  EXPECT_TRUE(std::equal(alone.span().begin(), alone.span().end(), noisy.span().begin() + kPixels));
}

TEST_F(SmallFashionMnist, DenoisingTakesNoAugmentation) {
  DataConfig config = config_for(dir_);
  config.task = DataTask::kDenoise;
  config.augment_flip = true;
  EXPECT_EQ(load_error(config),
            "data.task: denoise takes no augmentation (its targets are the images as stored)");
}

TEST(FashionMnist, LabelCountMismatchNamesBothFiles) {
  TempDir dir;
  testing::write_fashion_folder(dir, three_images(), {1, 2});
  const std::string message = load_error(config_for(dir));
  EXPECT_EQ(message, dir.file("train-labels-idx1-ubyte.gz") + ": 2 labels for 3 images in " +
                         dir.file("train-images-idx3-ubyte.gz"));
}

TEST(FashionMnist, LabelOutsideTenClassesIsAnError) {
  TempDir dir;
  testing::write_fashion_folder(dir, three_images(), {1, 10, 2});
  EXPECT_EQ(load_error(config_for(dir)), dir.file("train-labels-idx1-ubyte.gz") +
                                             ": label 10 of example 1 is not a class in [0, 10)");
}

TEST(FashionMnist, ImagesOfOtherSizeAreAnError) {
  TempDir dir;
  testing::write_fashion_folder(dir, three_images(), {1, 2, 3});
  testing::write_gz(dir.file("train-images-idx3-ubyte.gz"),
                    testing::idx_bytes(0x08, {3, 16, 49}, three_images()));
  EXPECT_NE(load_error(config_for(dir)).find("expected images of 28x28 pixels"), std::string::npos);
}

TEST(FashionMnist, MissingFileIsNamed) {
  TempDir dir;
  EXPECT_EQ(load_error(config_for(dir)), dir.file("train-images-idx3-ubyte.gz") + ": cannot open");
}

// The installed data set (Debian package dataset-fashion-mnist), loaded once.
const FashionMnist* real_data() {
  static const std::unique_ptr<FashionMnist> data = [] {
    if (!std::filesystem::exists(kDefaultFashionMnistPath)) return std::unique_ptr<FashionMnist>();
    return std::make_unique<FashionMnist>(DataConfig{});
  }();
  return data.get();
}

TEST(FashionMnistReal, HasSixtyThousandTrainingAndTenThousandTestImages) {
  if (real_data() == nullptr) GTEST_SKIP() << kDefaultFashionMnistPath << " not installed";
  EXPECT_EQ(real_data()->size(Split::kTrain), 60000);
  EXPECT_EQ(real_data()->size(Split::kTest), 10000);
  std::vector<int> counts(10, 0);
  for (int64_t i = 0; i < 60000; ++i)
    ++counts[static_cast<size_t>(real_data()->label(Split::kTrain, i))];
  for (int count : counts) EXPECT_EQ(count, 6000);
}

TEST(FashionMnistReal, NormalizedTrainingPixelsHaveZeroMeanAndUnitStd) {
  if (real_data() == nullptr) GTEST_SKIP() << kDefaultFashionMnistPath << " not installed";
  std::vector<int64_t> indices(2000);
  std::iota(indices.begin(), indices.end(), int64_t{0});
  const Tensor x = real_data()->inputs(Split::kTrain, indices, 0, 0);
  double sum = 0, square = 0;
  float low = x[0], high = x[0];
  for (float v : x.span()) {
    sum += v;
    square += double{v} * v;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  const double mean = sum / x.numel();
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(square / x.numel() - mean * mean), 1.0, 0.05);
  EXPECT_FLOAT_EQ(low, -0.2860f / 0.3530f);
  EXPECT_FLOAT_EQ(high, (1.0f - 0.2860f) / 0.3530f);
}

}  // namespace
}  // namespace mpipe::data
