// Autoregressive sampling (temperature, top-k, top-p) from the model's last-position logits.
#include "train/generator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "core/rng.h"
#include "data/text_corpus.h"
#include "model/model_builder.h"
#include "model/tied_weights.h"
#include "pipeline/stage.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
int64_t sample_index(std::span<const float> logits, const Sampling& sampling, float u) {
  const auto top = std::max_element(logits.begin(), logits.end());
  if (sampling.temperature == 0.0) return top - logits.begin();  // greedy
  std::vector<double> weights(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp((logits[i] - *top) / sampling.temperature);
    total += weights[i];
  }
  // The tokens ranked by logit (ties: lower index first); the first `kept` of them stay.
  std::vector<size_t> ranked(logits.size());
  std::iota(ranked.begin(), ranked.end(), size_t{0});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  size_t kept = ranked.size();
  if (sampling.top_k > 0) kept = std::min(kept, static_cast<size_t>(sampling.top_k));
  if (sampling.top_p < 1.0) {
    double mass = 0.0;
    size_t nucleus = 0;
    while (nucleus < kept && mass < sampling.top_p * total) mass += weights[ranked[nucleus++]];
    kept = nucleus;
  }
  for (size_t r = kept; r < ranked.size(); ++r) {
    total -= weights[ranked[r]];
    weights[ranked[r]] = 0.0;
  }
  double threshold = u * total;
  size_t last = 0;  // the last token kept, for a threshold that rounding leaves unspent
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0.0) continue;
    last = i;
    threshold -= weights[i];
    if (threshold < 0) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(last);
}

std::string generate_text(const model::ModelSpec& spec, int64_t seq_len,
                          const std::vector<checkpoint::NamedTensor>& weights,
                          const std::string& weights_source, const GenerateOptions& options,
                          kernels::KernelContext& kernels, const tokenize::Tokenizer* tokenizer) {
  const Sampling& sampling = options.sampling;
  check_input(sampling.temperature >= 0, "--temperature: must be >= 0 (0 = greedy), got {}",
              sampling.temperature);
  check_input(sampling.top_k >= 0, "--top-k: must be >= 0 (0 = all tokens), got {}",
              sampling.top_k);
  check_input(sampling.top_p > 0 && sampling.top_p <= 1, "--top-p: must be in (0, 1], got {}",
              sampling.top_p);
  const model::ModelInputs inputs = model::one_input(Shape{seq_len});
  auto layers = model::build_layers(spec, inputs, 0, static_cast<int>(spec.layers.size()));
  const std::optional<model::TiedWeights> tied = model::find_tied_weights(spec, layers);
  pipeline::Stage model(
      std::move(layers), plan::Recompute::kNever, 1, plan::WeightGrads::kAccumulate,
      std::make_shared<const model::ModelGraph>(model::model_graph(spec, inputs)));
  load_stage_weights(model, weights, weights_source, tied);
  const Shape output = model.layers().back()->output_shape();
  check_input(output.rank() == 2 && output[0] == seq_len,
              "{}: the model's output {} is not [seq_len, vocab] logits", weights_source, output);
  const int64_t vocab = output[1];

  const std::string prompt = options.prompt.empty() ? "\n" : options.prompt;
  std::vector<float> tokens;
  if (tokenizer != nullptr) {
    for (int id : tokenizer->encode(prompt)) tokens.push_back(static_cast<float>(id));
    check_input(!tokens.empty(), "--prompt: '{}' encodes to no tokens", prompt);
    check_input(tokenizer->vocab_size() == vocab,
                "{0}: the model outputs {2} scores per token but the tokenizer has {1} pieces",
                weights_source, tokenizer->vocab_size(), vocab);
  } else {
    tokens = data::encode_text(prompt);
  }
  // What follows the newest tokens in a window shorter than seq_len.
  const float padding = tokenizer != nullptr ? tokens.front() : static_cast<float>(' ');
  const CounterRng rng(options.seed, RngPurpose::kData, 0, 0);
  const nn::LayerContext ctx{.kernels = kernels, .training = false};
  for (int64_t n = 0; n < options.length; ++n) {
    // The newest seq_len tokens at positions 0.., padded after them: causal attention means the
    // logits at the last real position do not see the padding.
    const auto count = std::min<int64_t>(static_cast<int64_t>(tokens.size()), seq_len);
    Tensor window(Shape{1, seq_len});
    window.fill(padding);
    std::copy(tokens.end() - count, tokens.end(), window.data());
    pipeline::Bundle input = pipeline::bundle_of(std::move(window));
    const Tensor logits = std::move(model.evaluate(input, ctx).at(0));
    const auto row =
        std::span<const float>(logits.data() + (count - 1) * vocab, static_cast<size_t>(vocab));
    tokens.push_back(
        static_cast<float>(sample_index(row, sampling, rng.uniform(static_cast<uint64_t>(n)))));
  }
  if (tokenizer == nullptr) return data::decode_text(tokens);
  const std::vector<int> ids(tokens.begin(), tokens.end());
  return tokenizer->decode(ids);
}

}  // namespace mpipe::train
