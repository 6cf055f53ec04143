// Fashion-MNIST loading, validation, normalisation and augmented batch assembly.
#include "data/fashion_mnist.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/rng.h"
#include "data/idx_reader.h"
#include "data/image_augment.h"

namespace mpipe::data {
namespace {

constexpr int64_t kPixels = FashionMnist::kRows * FashionMnist::kCols;

}  // namespace

FashionMnist::Part FashionMnist::load_part(const std::string& folder, const std::string& prefix) {
  const std::string images_path =
      (std::filesystem::path(folder) / (prefix + "-images-idx3-ubyte.gz")).string();
  const std::string labels_path =
      (std::filesystem::path(folder) / (prefix + "-labels-idx1-ubyte.gz")).string();
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  check_input(images.dims.size() == 3 && images.dims[1] == kRows && images.dims[2] == kCols,
              "{}: expected images of {}x{} pixels, got dimensions [{}]", images_path, kRows, kCols,
              fmt::join(images.dims, ", "));
  check_input(labels.dims.size() == 1, "{}: expected one dimension of labels, got [{}]",
              labels_path, fmt::join(labels.dims, ", "));
  check_input(labels.dims[0] == images.dims[0], "{}: {} labels for {} images in {}", labels_path,
              labels.dims[0], images.dims[0], images_path);
  const auto bad = std::find_if(labels.bytes.begin(), labels.bytes.end(),
                                [](uint8_t label) { return label >= kClasses; });
  check_input(bad == labels.bytes.end(), "{}: label {} of example {} is not a class in [0, {})",
              labels_path, bad == labels.bytes.end() ? 0 : *bad, bad - labels.bytes.begin(),
              kClasses);
  return Part{
      .size = images.dims[0], .images = std::move(images.bytes), .labels = std::move(labels.bytes)};
}

FashionMnist::FashionMnist(const DataConfig& config) : config_(config) {
  check_input(config.augment_crop_padding >= 0 && config.augment_crop_padding < kRows,
              "data.augment_crop_padding: must be in [0, {}), got {}", kRows,
              config.augment_crop_padding);
  check_input(config.task != DataTask::kDenoise ||
                  (config.augment_crop_padding == 0 && !config.augment_flip),
              "data.task: denoise takes no augmentation (its targets are the images as stored)");
  check_input(config.noise_std > 0.0, "data.noise_std: must be > 0, got {}", config.noise_std);
  for (int byte = 0; byte < 256; ++byte) {
    const float scaled = static_cast<float>(byte) / 255.0f;
    pixel_value_[static_cast<size_t>(byte)] = config.normalize ? (scaled - kMean) / kStd : scaled;
  }
  const std::string folder = config.path.empty() ? kDefaultFashionMnistPath : config.path;
  train_ = load_part(folder, "train");
  test_ = load_part(folder, "t10k");
}

Shape FashionMnist::input_shape() const {
  return config_.flatten ? Shape{kPixels} : Shape{1, kRows, kCols};
}

Shape FashionMnist::target_shape() const { return denoise() ? input_shape() : Shape{}; }

int64_t FashionMnist::num_classes() const { return denoise() ? 0 : kClasses; }

int64_t FashionMnist::size(Split split) const { return part(split).size; }

void FashionMnist::check_index(Split split, int64_t index) const {
  check(index >= 0 && index < size(split), "Fashion-MNIST example {} out of range [0, {})", index,
        size(split));
}

std::span<const uint8_t> FashionMnist::pixels(Split split, int64_t index) const {
  check_index(split, index);
  return std::span<const uint8_t>(part(split).images)
      .subspan(static_cast<size_t>(index * kPixels), static_cast<size_t>(kPixels));
}

int64_t FashionMnist::label(Split split, int64_t index) const {
  check_index(split, index);
  return part(split).labels[static_cast<size_t>(index)];
}

Tensor FashionMnist::inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                            int64_t step) const {
  const auto count = static_cast<int64_t>(indices.size());
  const bool augment =
      split == Split::kTrain && (config_.augment_crop_padding > 0 || config_.augment_flip);
  Tensor out(input_shape().batched(count));  // [n, 784] or [n, 1, 28, 28]
  std::array<uint8_t, kPixels> augmented{};
  for (int64_t row = 0; row < count; ++row) {
    std::span<const uint8_t> image = pixels(split, indices[static_cast<size_t>(row)]);
    if (augment) {
      const AugmentDraw draw = draw_augment(seed, indices[static_cast<size_t>(row)], step,
                                            config_.augment_crop_padding, config_.augment_flip);
      apply_augment(image, kRows, kCols, draw, augmented);
      image = std::span<const uint8_t>(augmented);
    }
    float* dst = out.data() + row * kPixels;
    for (int64_t i = 0; i < kPixels; ++i) dst[i] = pixel_value_[image[static_cast<size_t>(i)]];
    if (denoise()) {
      const CounterRng noise(seed, RngPurpose::kData,
                             static_cast<uint32_t>(indices[static_cast<size_t>(row)]),
                             split == Split::kTrain ? static_cast<uint64_t>(step) + 1 : 0);
      const auto std = static_cast<float>(config_.noise_std);
      for (int64_t i = 0; i < kPixels; ++i) dst[i] += std * noise.normal(static_cast<uint64_t>(i));
    }
  }
  return out;
}

Tensor FashionMnist::targets(Split split, std::span<const int64_t> indices) const {
  if (denoise()) {  // the clean images (no augmentation: the config refuses it with denoise)
    Tensor out(input_shape().batched(static_cast<int64_t>(indices.size())));
    for (size_t row = 0; row < indices.size(); ++row) {
      const std::span<const uint8_t> image = pixels(split, indices[row]);
      float* dst = out.data() + static_cast<int64_t>(row) * kPixels;
      for (int64_t i = 0; i < kPixels; ++i) dst[i] = pixel_value_[image[static_cast<size_t>(i)]];
    }
    return out;
  }
  Tensor out(Shape{static_cast<int64_t>(indices.size())});  // [n]
  for (size_t row = 0; row < indices.size(); ++row) {
    out[static_cast<int64_t>(row)] = static_cast<float>(label(split, indices[row]));
  }
  return out;
}

}  // namespace mpipe::data
