// Synthetic datasets drawn from the seed: a linear teacher labelling Gaussian inputs, or token
// sequences following a noisy affine next-token rule (language-model shaped, for benchmarks).
#pragma once

#include <cstdint>
#include <vector>

#include "data/data_config.h"
#include "data/dataset.h"
#include "data/split_rows.h"

namespace mpipe::data {

// num_examples examples, the last max(1, num_examples / 8) of which are the test split.
// Features mode (tokens == false): inputs [features] ~ N(0, 1); targets are
// argmax_c (W x)_c for a random teacher W [classes, features] with unit-norm rows when
// classes >= 2, or w . x + 0.1 * noise, [1], with |w| = 1 when classes == 0 (regression).
// Tokens mode (tokens == true): inputs [seq_len] = t[0..seq_len), targets [seq_len] =
// t[1..seq_len], where t[0] is uniform in [0, vocab) and t[i+1] = (a * t[i] + b) % vocab with
// probability 1 - kTokenNoise, else a uniform token. Everything is drawn from
// CounterRng(seed, RngPurpose::kData, ...), so it is the same on every rank.
class SyntheticDataset : public Dataset {
 public:
  static constexpr double kTokenNoise = 0.1;

  SyntheticDataset(const DataConfig& config, uint64_t seed);

  Shape input_shape() const override;
  Shape target_shape() const override;
  int64_t num_classes() const override;  // classes, 0 for regression, vocab for tokens
  int64_t input_vocab() const override;  // vocab for tokens, else 0
  std::string_view name() const override { return "synthetic"; }
  int64_t size(Split split) const override;
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  Tensor targets(Split split, std::span<const int64_t> indices) const override;

  // Tokens mode: the cross-entropy (nats per token) of the true next-token distribution, the
  // lowest loss any model can reach on this data.
  double optimal_token_loss() const;

 private:
  void generate_features(uint64_t seed);
  void generate_tokens(uint64_t seed);
  DataConfig config_;
  SplitRows rows_;
  int64_t input_size_ = 0;      // floats per example input
  int64_t target_size_ = 0;     // floats per example target
  std::vector<float> inputs_;   // [num_examples, input_size_]
  std::vector<float> targets_;  // [num_examples, target_size_]
};

}  // namespace mpipe::data
