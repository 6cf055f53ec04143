// Fashion-MNIST (Xiao et al., 2017): 28x28 grey images of clothing in 10 classes, read from the
// four gzipped IDX files of the Debian package dataset-fashion-mnist; classified, or (data.task:
// denoise) each image given with noise added, to be given back clean.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/data_config.h"
#include "data/dataset.h"

namespace mpipe::data {

inline constexpr const char* kDefaultFashionMnistPath = "/usr/share/datasets/fashion-mnist";

class FashionMnist : public Dataset {
 public:
  static constexpr int64_t kRows = 28;
  static constexpr int64_t kCols = 28;
  static constexpr int64_t kClasses = 10;
  // Mean and standard deviation of the training pixels scaled to [0, 1].
  static constexpr float kMean = 0.2860f;
  static constexpr float kStd = 0.3530f;

  // Loads train-{images,labels} and t10k-{images,labels} from config.path (default
  // kDefaultFashionMnistPath). Throws InputError naming the file for missing or malformed data.
  explicit FashionMnist(const DataConfig& config);

  Shape input_shape() const override;  // [784] when flattened, else [1, 28, 28]
  // [] (a class), or the input's shape when denoising.
  Shape target_shape() const override;
  int64_t num_classes() const override;  // kClasses, or 0 (real values) when denoising
  // A denoising example's input is its image plus noise_std x N(0, 1) per pixel, drawn from
  // CounterRng(seed, kData, example index, b), b = step + 1 for a training example (fresh noise at
  // every step) and 0 for a test example (the same noise at every evaluation): the same on
  // every rank, whatever the layout.
  int64_t input_vocab() const override { return 0; }
  std::string_view name() const override { return "fashion_mnist"; }
  int64_t size(Split split) const override;
  // [n, 784] or [n, 1, 28, 28]; train examples augmented per (seed, example, step) if configured.
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  // [n]: class indices as floats; denoising: the clean inputs, [n, ...input_shape()].
  Tensor targets(Split split, std::span<const int64_t> indices) const override;

  // The raw bytes of one image, [28, 28], before normalisation and augmentation.
  std::span<const uint8_t> pixels(Split split, int64_t index) const;
  int64_t label(Split split, int64_t index) const;

 private:
  struct Part {
    int64_t size = 0;
    std::vector<uint8_t> images;  // [size, 28, 28]
    std::vector<uint8_t> labels;  // [size]
  };
  static Part load_part(const std::string& folder, const std::string& prefix);
  const Part& part(Split split) const { return split == Split::kTrain ? train_ : test_; }
  void check_index(Split split, int64_t index) const;
  bool denoise() const { return config_.task == DataTask::kDenoise; }

  DataConfig config_;
  std::array<float, 256> pixel_value_{};  // byte -> input value (scaled, normalised if set)
  Part train_;
  Part test_;
};

}  // namespace mpipe::data
