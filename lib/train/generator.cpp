// Autoregressive sampling with temperature from the model's last-position logits.
#include "train/generator.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "data/text_corpus.h"
#include "model/model_builder.h"
#include "pipeline/stage.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
int64_t sample_index(std::span<const float> logits, double temperature, float u) {
  const auto top = std::max_element(logits.begin(), logits.end());
  if (temperature == 0.0) return top - logits.begin();  // greedy
  std::vector<double> weights(logits.size());
  double total = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp((logits[i] - *top) / temperature);
    total += weights[i];
  }
  double threshold = u * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    threshold -= weights[i];
    if (threshold < 0) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(weights.size()) - 1;
}

std::string generate_text(const model::ModelSpec& spec, int64_t seq_len,
                          const std::vector<checkpoint::NamedTensor>& weights,
                          const std::string& weights_source, const GenerateOptions& options,
                          kernels::KernelContext& kernels) {
  check_input(options.temperature >= 0, "--temperature: must be >= 0 (0 = greedy), got {}",
              options.temperature);
  pipeline::Stage model(
      model::build_layers(spec, Shape{seq_len}, 0, static_cast<int>(spec.layers.size())),
      pipeline::Recompute::kNever, 1);
  load_stage_weights(model, weights, weights_source);
  const Shape output = model.layers().back()->output_shape();
  check_input(output.rank() == 2 && output[0] == seq_len,
              "{}: the model's output {} is not [seq_len, vocab] logits", weights_source, output);
  const int64_t vocab = output[1];

  std::vector<float> tokens = data::encode_text(options.prompt.empty() ? "\n" : options.prompt);
  const CounterRng rng(options.seed, RngPurpose::kData, 0, 0);
  const nn::LayerContext ctx{.kernels = kernels, .training = false};
  for (int64_t n = 0; n < options.length; ++n) {
    // The newest seq_len tokens at positions 0.., padded after them: causal attention means the
    // logits at the last real position do not see the padding.
    const auto count = std::min<int64_t>(static_cast<int64_t>(tokens.size()), seq_len);
    Tensor window(Shape{1, seq_len});
    window.fill(static_cast<float>(' '));
    std::copy(tokens.end() - count, tokens.end(), window.data());
    const Tensor logits = model.evaluate(window, ctx);
    const auto row =
        std::span<const float>(logits.data() + (count - 1) * vocab, static_cast<size_t>(vocab));
    tokens.push_back(static_cast<float>(
        sample_index(row, options.temperature, rng.uniform(static_cast<uint64_t>(n)))));
  }
  return data::decode_text(tokens);
}

}  // namespace mpipe::train
