// Generation of the synthetic teacher and token datasets, and batch assembly from them.
#include "data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace mpipe::data {
namespace {

// Stream ids (the `a` of CounterRng) inside RngPurpose::kData.
constexpr uint32_t kTeacherStream = 0;
constexpr uint32_t kExampleStream = 1;
constexpr uint32_t kTokenRuleStream = 2;
constexpr float kRegressionNoise = 0.1f;
constexpr int64_t kMaxVocab = int64_t{1} << 24;  // token ids stay exact in float

}  // namespace

SyntheticDataset::SyntheticDataset(const DataConfig& config, uint64_t seed) : config_(config) {
  check_input(config.num_examples >= 2, "data.num_examples: must be >= 2, got {}",
              config.num_examples);
  rows_.num_test = std::max<int64_t>(1, config.num_examples / 8);
  rows_.num_train = config.num_examples - rows_.num_test;
  if (config.tokens) {
    generate_tokens(seed);
  } else {
    generate_features(seed);
  }
}

void SyntheticDataset::generate_features(uint64_t seed) {
  const int64_t features = config_.features;
  const int64_t classes = config_.classes;
  check_input(features >= 1, "data.features: must be >= 1, got {}", features);
  check_input(classes == 0 || classes >= 2, "data.classes: must be 0 (regression) or >= 2, got {}",
              classes);
  const int64_t num_rows = std::max<int64_t>(classes, 1);
  // teacher: [num_rows, features], rows random directions of unit norm, so (W x)_c ~ N(0, 1).
  std::vector<float> teacher(static_cast<size_t>(num_rows * features));
  const CounterRng teacher_rng(seed, RngPurpose::kData, kTeacherStream, 0);
  for (size_t i = 0; i < teacher.size(); ++i) teacher[i] = teacher_rng.normal(i);
  for (int64_t c = 0; c < num_rows; ++c) {
    float* w = teacher.data() + c * features;
    float norm = 0.0f;
    for (int64_t j = 0; j < features; ++j) norm += w[j] * w[j];
    const float scale = 1.0f / std::sqrt(std::max(norm, 1e-12f));
    for (int64_t j = 0; j < features; ++j) w[j] *= scale;
  }

  input_size_ = features;
  target_size_ = classes == 0 ? 1 : 0;
  const int64_t n = config_.num_examples;
  inputs_.resize(static_cast<size_t>(n * features));
  targets_.resize(static_cast<size_t>(n));
  std::vector<float> logits(static_cast<size_t>(num_rows));
  for (int64_t example = 0; example < n; ++example) {
    const CounterRng rng(seed, RngPurpose::kData, kExampleStream, static_cast<uint64_t>(example));
    float* x = inputs_.data() + example * features;
    for (int64_t j = 0; j < features; ++j) x[j] = rng.normal(static_cast<uint64_t>(j));
    for (int64_t c = 0; c < num_rows; ++c) {
      const float* w = teacher.data() + c * features;
      float dot = 0.0f;
      for (int64_t j = 0; j < features; ++j) dot += w[j] * x[j];
      logits[static_cast<size_t>(c)] = dot;
    }
    targets_[static_cast<size_t>(example)] =
        classes == 0
            ? logits[0] + kRegressionNoise * rng.normal(static_cast<uint64_t>(features))
            : static_cast<float>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
}

void SyntheticDataset::generate_tokens(uint64_t seed) {
  const int64_t vocab = config_.vocab;
  const int64_t seq_len = config_.seq_len;
  check_input(vocab >= 2 && vocab <= kMaxVocab, "data.vocab: must be in [2, {}], got {}", kMaxVocab,
              vocab);
  check_input(seq_len >= 1, "data.seq_len: must be >= 1, got {}", seq_len);
  const CounterRng rule_rng(seed, RngPurpose::kData, kTokenRuleStream, 0);
  const auto v = static_cast<uint64_t>(vocab);
  const uint64_t a = 1 + rule_rng.bits(0) % (v - 1);  // in [1, vocab)
  const uint64_t b = rule_rng.bits(1) % v;

  input_size_ = seq_len;
  target_size_ = seq_len;
  const int64_t n = config_.num_examples;
  inputs_.resize(static_cast<size_t>(n * seq_len));
  targets_.resize(static_cast<size_t>(n * seq_len));
  for (int64_t example = 0; example < n; ++example) {
    // Draw 1: the first token; draws 3(i+1), 3(i+1)+1: noise coin and noise token of step i.
    const CounterRng rng(seed, RngPurpose::kData, kExampleStream, static_cast<uint64_t>(example));
    uint64_t token = rng.bits(1) % v;
    float* x = inputs_.data() + example * seq_len;
    float* y = targets_.data() + example * seq_len;
    for (int64_t i = 0; i < seq_len; ++i) {
      x[i] = static_cast<float>(token);
      const auto draw = static_cast<uint64_t>(3 * (i + 1));
      token = rng.uniform(draw) < static_cast<float>(kTokenNoise) ? rng.bits(draw + 1) % v
                                                                  : (a * token + b) % v;
      y[i] = static_cast<float>(token);
    }
  }
}

Shape SyntheticDataset::input_shape() const { return Shape{input_size_}; }

Shape SyntheticDataset::target_shape() const {
  return target_size_ == 0 ? Shape{} : Shape{target_size_};
}

int64_t SyntheticDataset::num_classes() const {
  return config_.tokens ? config_.vocab : config_.classes;
}

int64_t SyntheticDataset::input_vocab() const { return config_.tokens ? config_.vocab : 0; }

int64_t SyntheticDataset::size(Split split) const { return rows_.size(split); }

Tensor SyntheticDataset::inputs(Split split, std::span<const int64_t> indices, uint64_t /*seed*/,
                                int64_t /*step*/) const {
  const auto count = static_cast<int64_t>(indices.size());
  Tensor out(input_shape().batched(count));  // [n, features] or [n, seq_len]
  for (int64_t r = 0; r < count; ++r) {
    const float* src = inputs_.data() +
                       rows_.row(split, indices[static_cast<size_t>(r)], "synthetic") * input_size_;
    std::copy_n(src, input_size_, out.data() + r * input_size_);
  }
  return out;
}

Tensor SyntheticDataset::targets(Split split, std::span<const int64_t> indices) const {
  const auto count = static_cast<int64_t>(indices.size());
  const int64_t width = std::max<int64_t>(target_size_, 1);
  Tensor out(target_shape().batched(count));  // [n], [n, 1] or [n, seq_len]
  for (int64_t r = 0; r < count; ++r) {
    const float* src =
        targets_.data() + rows_.row(split, indices[static_cast<size_t>(r)], "synthetic") * width;
    std::copy_n(src, width, out.data() + r * width);
  }
  return out;
}

double SyntheticDataset::optimal_token_loss() const {
  check(config_.tokens, "optimal_token_loss: not a token dataset");
  const auto v = static_cast<double>(config_.vocab);
  const double other = kTokenNoise / v;  // any token other than the rule's
  const double likely = 1.0 - kTokenNoise + other;
  return -(likely * std::log(likely) + (v - 1.0) * other * std::log(other));
}

}  // namespace mpipe::data
