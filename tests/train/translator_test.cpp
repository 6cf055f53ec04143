// Translator's decoding against brute force on a tiny random encoder-decoder: greedy against
// step-by-step forwards of one sentence, beam search wide enough to be exhaustive against every
// hypothesis scored.
#include "train/translator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "model/model_builder.h"
#include "pipeline/stage.h"
#include "support/layer_spec.h"
#include "support/random_tensor.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

using testing::layer_spec;
using testing::reading_layer_spec;

constexpr int64_t kVocab = 6;  // pad 0, unk 1, bos 2, eos 3, two words
constexpr int64_t kSourceLen = 5;
constexpr SpecialTokens kTokens{.pad = 0, .bos = 2, .eos = 3};

model::ValueRef value(const std::string& name) { return {name, {"exp.yaml", 9, "model.layers"}}; }

// Source embedding (saved as memory), target embedding, causal self-attention, cross-attention
// over the memory with the source's padding masked, the head.
model::ModelSpec tiny_translation_model(int64_t target_len) {
  model::ModelSpec spec;
  model::LayerSpec source =
      layer_spec("embedding", {{"vocab", kVocab}, {"dim", int64_t{8}}, {"max_len", kSourceLen}});
  source.input = value("source");
  source.save = value("memory");
  model::LayerSpec target =
      layer_spec("embedding", {{"vocab", kVocab}, {"dim", int64_t{8}}, {"max_len", target_len}});
  target.input = value("target_in");
  spec.layers = {
      source, target, layer_spec("attention", {{"heads", int64_t{2}}}),
      reading_layer_spec("cross_attention", {{"heads", int64_t{2}}}, {"memory", "source"}),
      layer_spec("linear", {{"units", kVocab}})};
  return spec;
}

// The model as Translator builds it, with weights of values uniform in [-2, 2) (spread logits, so
// no near ties), and those weights.
struct Reference {
  std::unique_ptr<pipeline::Stage> stage;
  std::vector<checkpoint::NamedTensor> weights;
  int64_t target_len;
};

Reference make_reference(int64_t target_len, uint64_t seed) {
  const model::ModelSpec spec = tiny_translation_model(target_len);
  const model::ModelInputs inputs{{"source", Shape{kSourceLen}}, {"target_in", Shape{target_len}}};
  auto layers = model::build_layers(spec, inputs, 0, static_cast<int>(spec.layers.size()));
  Reference reference{.stage = nullptr, .weights = {}, .target_len = target_len};
  uint64_t stream = 0;
  for (const WeightSlot& slot : weight_layout(layers, std::nullopt)) {
    const Tensor values = testing::uniform_tensor(slot.tensor.shape,
                                                  CounterRng(seed, RngPurpose::kData, stream++, 0));
    std::vector<float> scaled(values.data(), values.data() + values.numel());
    for (float& v : scaled) v *= 2.0f;
    reference.weights.push_back({slot.tensor.name, slot.tensor.shape, std::move(scaled)});
  }
  reference.stage = std::make_unique<pipeline::Stage>(
      std::move(layers), plan::Recompute::kNever, 1, plan::WeightGrads::kAccumulate,
      std::make_shared<const model::ModelGraph>(model::model_graph(spec, inputs)));
  load_stage_weights(*reference.stage, reference.weights, "reference", std::nullopt);
  return reference;
}

// The log-probabilities of the id after `prefix` (after bos), from a forward of this one sentence
// whose decoder input is filled after the prefix with `filler` (causal attention: unseen).
std::vector<double> next_log_probs(Reference& reference, const std::vector<int>& source,
                                   const std::vector<int>& prefix, float filler) {
  Tensor source_ids(Shape{1, kSourceLen});
  source_ids.fill(static_cast<float>(kTokens.pad));
  for (size_t i = 0; i < source.size(); ++i) source_ids[static_cast<int64_t>(i)] = source[i];
  Tensor target_in(Shape{1, reference.target_len});
  target_in.fill(filler);
  target_in[0] = static_cast<float>(kTokens.bos);
  for (size_t i = 0; i < prefix.size(); ++i) target_in[static_cast<int64_t>(i) + 1] = prefix[i];
  pipeline::Bundle input;
  input.push_back(std::move(source_ids));
  input.push_back(std::move(target_in));
  kernels::KernelContext kernels;
  const Tensor logits =
      std::move(reference.stage->evaluate(input, {.kernels = kernels, .training = false}).at(0));
  const auto position = static_cast<int64_t>(prefix.size());
  std::vector<double> out(static_cast<size_t>(kVocab));
  double sum = 0;
  for (int64_t v = 0; v < kVocab; ++v) sum += std::exp(double{logits[position * kVocab + v]});
  for (int64_t v = 0; v < kVocab; ++v) {
    out[static_cast<size_t>(v)] = logits[position * kVocab + v] - std::log(sum);
  }
  return out;
}

const std::vector<std::vector<int>> kSources = {{4, 5, 4, 3}, {5, 3}, {4, 4, 5, 5, 3}, {3}};

TEST(Translator, GreedyIsTheMostLikelyIdStepByStep) {
  Reference reference = make_reference(6, 17);
  kernels::KernelContext kernels;
  Translator translator(tiny_translation_model(6), kSourceLen, 6, kTokens, reference.weights,
                        "weights", kernels);
  // Batches of 3 and 1, the rows finishing at different steps.
  const auto translations = translator.translate(kSources, {.beam = 1, .batch = 3});
  ASSERT_EQ(translations.size(), kSources.size());
  int ended_early = 0;
  for (size_t s = 0; s < kSources.size(); ++s) {
    std::vector<int> expected;
    while (std::ssize(expected) < reference.target_len) {
      const std::vector<double> log_probs =
          next_log_probs(reference, kSources[s], expected, static_cast<float>(s % kVocab));
      const auto id = static_cast<int>(std::max_element(log_probs.begin(), log_probs.end()) -
                                       log_probs.begin());
      if (id == kTokens.eos) {
        ++ended_early;
        break;
      }
      expected.push_back(id);
    }
    EXPECT_EQ(translations[s], expected) << "sentence " << s;
  }
  // The weights were picked so that both kinds of ending are checked, and a translation whose ids
  // change from step to step (a decoder that read the wrong position would repeat one id).
  EXPECT_GT(ended_early, 0);
  EXPECT_LT(ended_early, std::ssize(kSources));
  EXPECT_TRUE(std::any_of(translations.begin(), translations.end(), [](const auto& ids) {
    return std::adjacent_find(ids.begin(), ids.end(), std::not_equal_to<>()) != ids.end();
  }));
}

TEST(Translator, AWideBeamFindsTheBestHypothesisByScorePerId) {
  constexpr int64_t kTargetLen = 3;
  Reference reference = make_reference(kTargetLen, 5);
  kernels::KernelContext kernels;
  Translator translator(tiny_translation_model(kTargetLen), kSourceLen, kTargetLen, kTokens,
                        reference.weights, "weights", kernels);
  // Wide enough to keep every hypothesis: kVocab^(kTargetLen - 1).
  const auto translations = translator.translate(kSources, {.beam = kVocab * kVocab, .batch = 2});
  ASSERT_EQ(translations.size(), kSources.size());
  for (size_t s = 0; s < kSources.size(); ++s) {
    // Every hypothesis: ids ending with eos, or kTargetLen ids; score / its length.
    std::vector<int> best;
    double best_score = -INFINITY;
    const std::function<void(std::vector<int>&, double)> visit = [&](std::vector<int>& prefix,
                                                                     double score) {
      const std::vector<double> log_probs = next_log_probs(reference, kSources[s], prefix, 0);
      const auto length = static_cast<double>(prefix.size() + 1);
      for (int id = 0; id < kVocab; ++id) {
        const double total = score + log_probs[static_cast<size_t>(id)];
        const bool ends = id == kTokens.eos || std::ssize(prefix) + 1 == kTargetLen;
        if (!ends) {
          prefix.push_back(id);
          visit(prefix, total);
          prefix.pop_back();
        } else if (total / length > best_score) {
          best_score = total / length;
          best = prefix;
          if (id != kTokens.eos) best.push_back(id);
        }
      }
    };
    std::vector<int> prefix;
    visit(prefix, 0);
    EXPECT_EQ(translations[s], best) << "sentence " << s;
  }
}

TEST(Translator, TheBatchDoesNotChangeTheTranslations) {
  Reference reference = make_reference(6, 23);
  kernels::KernelContext kernels;
  Translator translator(tiny_translation_model(6), kSourceLen, 6, kTokens, reference.weights,
                        "weights", kernels);
  for (int64_t beam : {1, 4}) {
    EXPECT_EQ(translator.translate(kSources, {.beam = beam, .batch = 4}),
              translator.translate(kSources, {.beam = beam, .batch = 1}))
        << "beam " << beam;
  }
}

TEST(Translator, RefusesWeightsOfAnotherModel) {
  Reference reference = make_reference(6, 11);
  kernels::KernelContext kernels;
  try {
    Translator(tiny_translation_model(7), kSourceLen, 7, kTokens, reference.weights, "w.st",
               kernels);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("w.st"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpipe::train
