// Tests for tied embeddings on one stage: the head's copy starts as the embedding's draw; the
// summed gradient of the two uses matches finite differences of the loss in the shared matrix
// (and neither use's gradient alone does); a group of three uses (an encoder-decoder's) sums in
// use order on every layout; the norm counts the matrix once; weights and optimizer state hold it
// once and restore both copies, also into two chunks of one rank; a file whose head copy differs
// is refused.
#include "train/tied_copies.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model_builder.h"
#include "nn/loss.h"
#include "optim/optimizer.h"
#include "support/tied_models.h"
#include "train/stage_tensors.h"

namespace mpipe::train {
namespace {

constexpr int64_t kVocab = 7, kDim = 4, kSeq = 3, kRows = 2;
constexpr uint64_t kSeed = 5;

// embedding → tanh → linear tied to the embedding, with a bias (its own parameter).
model::ModelSpec tied_model() {
  model::ModelSpec spec;
  spec.layers = {
      testing::indexed_layer(0, "embedding", {{"vocab", kVocab}, {"dim", kDim}}),
      testing::indexed_layer(1, "tanh", {}),
      testing::indexed_layer(2, "linear", {{"units", kVocab}, {"tie", std::string("embedding")}})};
  spec.where = {"exp.yaml", 2, "model"};
  return spec;
}

struct TiedModel {
  model::ModelSpec spec = tied_model();
  std::optional<model::TiedWeights> tied;
  std::unique_ptr<pipeline::Stage> stage;
  std::unique_ptr<TiedCopies> copies;

  TiedModel() {
    auto layers = model::build_layers(spec, Shape{kSeq}, 0, 3);
    tied = model::find_tied_weights(spec, layers);
    stage = std::make_unique<pipeline::Stage>(std::move(layers), plan::Recompute::kNever, 1);
    stage->params().initialize(kSeed);
    copies =
        std::make_unique<TiedCopies>(tied, std::vector<plan::LayerRange>{{0, 3}}, plan::Placement{},
                                     0, nullptr, std::vector<pipeline::Stage*>{stage.get()});
    copies->initialize(kSeed, spec, model::one_input(Shape{kSeq}));
  }
  std::span<float> param(int layer, const std::string& name, bool grad = false) {
    auto& params = stage->params();
    for (const auto& entry : params.entries()) {
      if (entry.global_layer == layer && entry.name == name) {
        return (grad ? params.grads() : params.values())
            .subspan(static_cast<size_t>(entry.offset), static_cast<size_t>(entry.shape.numel()));
      }
    }
    throw Error("no such parameter");
  }
  std::span<float> token(bool grad = false) { return param(0, "token", grad); }
  std::span<float> head(bool grad = false) { return param(2, "weight", grad); }
};

TEST(TiedCopies, TheHeadStartsAsTheEmbeddingsDraw) {
  TiedModel m;
  ASSERT_TRUE(m.tied.has_value());
  EXPECT_TRUE(std::ranges::equal(m.token(), m.head()));
  EXPECT_TRUE(std::ranges::any_of(m.head(), [](float v) { return v != 0.0f; }));
}

// The loss summed over the rows (grad_scale 1), and with `grad` its gradients in the stage.
double loss_of(TiedModel& m, kernels::KernelContext& kernels, bool grad) {
  const Tensor ids(Shape{kRows, kSeq}, std::vector<float>{1, 4, 6, 0, 3, 5});
  const Tensor targets(Shape{kRows, kSeq}, std::vector<float>{4, 6, 2, 3, 5, 1});
  const auto loss = nn::make_loss("cross_entropy");
  const nn::LayerContext ctx{.kernels = kernels, .seed = kSeed, .training = grad};
  pipeline::Bundle input = pipeline::bundle_of(ids);
  if (!grad) {
    return loss->compute(kernels, m.stage->evaluate(input, ctx).at(0), targets, 1.0f, false).sum;
  }
  m.stage->params().zero_grads();
  nn::LossOutput out =
      loss->compute(kernels, m.stage->forward(0, std::move(input), ctx).at(0), targets, 1.0f, true);
  m.stage->backward(0, pipeline::bundle_of(std::move(out.grad)), ctx);
  return out.sum;
}

TEST(TiedCopies, TheSummedGradientIsTheLossGradientInTheSharedMatrix) {
  TiedModel m;
  kernels::KernelContext kernels;
  // Values of a scale whose gradients are far from zero, the same in both copies.
  for (float& v : m.token()) v *= 25.0f;
  std::ranges::copy(m.token(), m.head().begin());
  loss_of(m, kernels, true);
  const std::vector<float> embedding_use(m.token(true).begin(), m.token(true).end());
  m.copies->sum_gradients();
  EXPECT_TRUE(std::ranges::equal(m.token(true), m.head(true)));
  const std::vector<float> summed(m.token(true).begin(), m.token(true).end());

  constexpr double kEpsilon = 1e-2, kTolerance = 2e-2;
  int embedding_use_alone_wrong = 0;
  for (size_t i = 0; i < summed.size(); ++i) {
    const float saved = m.token()[i];
    auto shifted = [&](double by) {
      m.token()[i] = m.head()[i] = static_cast<float>(saved + by);
      return loss_of(m, kernels, false);
    };
    const double numeric = (shifted(kEpsilon) - shifted(-kEpsilon)) / (2 * kEpsilon);
    m.token()[i] = m.head()[i] = saved;
    auto error = [numeric](double analytic) {
      return std::abs(analytic - numeric) / std::max(1e-3, std::abs(analytic) + std::abs(numeric));
    };
    EXPECT_LT(error(summed[i]), kTolerance)
        << "element " << i << ": summed " << summed[i] << ", finite differences " << numeric;
    embedding_use_alone_wrong += error(embedding_use[i]) > kTolerance;
  }
  // The check can fail: most elements' gradient through the embedding alone is not the answer.
  EXPECT_GT(embedding_use_alone_wrong, static_cast<int>(summed.size()) / 2);
}

// Sets the gradient of every trainable parameter of `stage` to `value` (the alignment padding
// between them stays 0, as in a run).
void fill_params(pipeline::Stage& stage, float value) {
  for (const auto& entry : stage.params().entries()) {
    if (!entry.trainable) continue;
    std::ranges::fill(stage.params().grads().subspan(static_cast<size_t>(entry.offset),
                                                     static_cast<size_t>(entry.shape.numel())),
                      value);
  }
}

// One rank, two chunks (K = 1, v = 2): the embedding in chunk 0, the head in chunk 1. The copies
// sum across the chunks' buffers, and the norm keeps the head chunk's bias only.
TEST(TiedCopies, TwoChunksOfOneRankSumTheirUsesInPlace) {
  const model::ModelSpec spec = tied_model();
  const auto tied = model::find_tied_weights(spec, model::build_layers(spec, Shape{kSeq}, 0, 3));
  ASSERT_TRUE(tied.has_value());
  pipeline::Stage embedding(model::build_layers(spec, Shape{kSeq}, 0, 1), plan::Recompute::kNever,
                            1);
  pipeline::Stage head(model::build_layers(spec, Shape{kSeq}, 1, 3), plan::Recompute::kNever, 1);
  TiedCopies copies(tied, {{0, 1}, {1, 3}}, plan::Placement{.num_ranks = 1, .virtual_stages = 2}, 0,
                    nullptr, {&embedding, &head});
  fill_params(embedding, 1.0f);
  fill_params(head, 2.0f);
  copies.sum_gradients();
  const auto grad = [](pipeline::Stage& stage, int layer, const std::string& name) {
    for (const auto& entry : stage.params().entries()) {
      if (entry.global_layer == layer && entry.name == name) {
        const auto all = stage.params().grads().subspan(static_cast<size_t>(entry.offset),
                                                        static_cast<size_t>(entry.shape.numel()));
        return std::vector<float>(all.begin(), all.end());
      }
    }
    throw Error("no such parameter");
  };
  const std::vector<float> summed(kVocab * kDim, 3.0f);
  EXPECT_EQ(grad(embedding, 0, "token"), summed);
  EXPECT_EQ(grad(head, 2, "weight"), summed);
  EXPECT_EQ(grad(head, 2, "bias"), std::vector<float>(kVocab, 2.0f));
  const auto per_layer = head.params().grad_square_sums_per_layer(copies.uncounted(head));
  ASSERT_EQ(per_layer.back().first, 2);
  EXPECT_EQ(per_layer.back().second, 2.0 * 2.0 * kVocab);  // the bias alone
}

const model::ModelInputs kTwoInputs = {{.name = "source", .shape = Shape{kSeq}},
                                       {.name = "target_in", .shape = Shape{kSeq}}};

// The gradient of parameter `name` of global layer `layer`, wherever among `stages` it is.
std::vector<float> grad_of(const std::vector<pipeline::Stage*>& stages, int layer,
                           const std::string& name) {
  for (const pipeline::Stage* stage : stages) {
    for (const auto& entry : stage->params().entries()) {
      if (entry.global_layer == layer && entry.name == name) {
        const auto all = stage->params().grads().subspan(static_cast<size_t>(entry.offset),
                                                         static_cast<size_t>(entry.shape.numel()));
        return {all.begin(), all.end()};
      }
    }
  }
  throw Error("no such parameter");
}

void fill_grad(const std::vector<pipeline::Stage*>& stages, int layer, const std::string& name,
               float value) {
  for (pipeline::Stage* stage : stages) {
    for (const auto& entry : stage->params().entries()) {
      if (entry.global_layer == layer && entry.name == name) {
        std::ranges::fill(stage->params().grads().subspan(static_cast<size_t>(entry.offset),
                                                          static_cast<size_t>(entry.shape.numel())),
                          value);
      }
    }
  }
}

// The three uses' gradients are 1, 1e8 and -1e8: in use order (1 + 1e8) - 1e8 is 0 in floats,
// where any other order gives 1 (1e8 - 1e8 + 1, or 1 + (1e8 - 1e8)). Every layout sums in use
// order: one stage, or three chunks of one rank handed over in any order.
TEST(TiedCopies, AGroupOfThreeUsesSumsInUseOrderOnEveryLayout) {
  const model::ModelSpec spec = testing::three_uses_model(kVocab, kDim);
  const auto tied = model::find_tied_weights(spec, model::build_layers(spec, kTwoInputs, 0, 4));
  ASSERT_TRUE(tied.has_value());
  ASSERT_EQ(tied->copies.size(), 2U);
  pipeline::Stage whole(model::build_layers(spec, kTwoInputs, 0, 4), plan::Recompute::kNever, 1);
  pipeline::Stage first(model::build_layers(spec, kTwoInputs, 0, 1), plan::Recompute::kNever, 1);
  pipeline::Stage middle(model::build_layers(spec, kTwoInputs, 1, 3), plan::Recompute::kNever, 1);
  pipeline::Stage last(model::build_layers(spec, kTwoInputs, 3, 4), plan::Recompute::kNever, 1);
  const std::vector<std::vector<pipeline::Stage*>> layouts = {
      {&whole}, {&first, &middle, &last}, {&last, &first, &middle}};
  for (const auto& stages : layouts) {
    const bool one_stage = stages.size() == 1;
    TiedCopies copies(
        tied,
        one_stage ? std::vector<plan::LayerRange>{{0, 4}}
                  : std::vector<plan::LayerRange>{{0, 1}, {1, 3}, {3, 4}},
        plan::Placement{.num_ranks = 1, .virtual_stages = static_cast<int>(stages.size())}, 0,
        nullptr, stages);
    for (pipeline::Stage* stage : stages) fill_params(*stage, 3.0f);
    fill_grad(stages, 0, "token", 1.0f);
    fill_grad(stages, 1, "token", 1e8f);
    fill_grad(stages, 3, "weight", -1e8f);
    copies.sum_gradients();
    const std::vector<float> zero(kVocab * kDim, 0.0f);
    EXPECT_EQ(grad_of(stages, 0, "token"), zero) << stages.size() << " stages";
    EXPECT_EQ(grad_of(stages, 1, "token"), zero) << stages.size() << " stages";
    EXPECT_EQ(grad_of(stages, 3, "weight"), zero) << stages.size() << " stages";
    // Not tied: the target embedding's positions and the head's bias keep their own.
    EXPECT_EQ(grad_of(stages, 1, "position"), std::vector<float>(kSeq * kDim, 3.0f));
    EXPECT_EQ(grad_of(stages, 3, "bias"), std::vector<float>(kVocab, 3.0f));
    // The norm counts the matrix once, in the first embedding's entry.
    std::vector<std::pair<int, double>> per_layer;
    for (pipeline::Stage* stage : stages) {
      for (const auto& entry :
           stage->params().grad_square_sums_per_layer(copies.uncounted(*stage))) {
        per_layer.push_back(entry);
      }
    }
    std::ranges::sort(per_layer);
    ASSERT_EQ(per_layer.size(), 4U);
    EXPECT_EQ(per_layer[1].second, 9.0 * kSeq * kDim);  // the target embedding's positions
    EXPECT_EQ(per_layer[3].second, 9.0 * kVocab);       // the head's bias
  }
}

// Every copy of a group of three starts as the first embedding's draw.
TEST(TiedCopies, EveryCopyOfAGroupStartsAsTheEmbeddingsDraw) {
  const model::ModelSpec spec = testing::three_uses_model(kVocab, kDim);
  pipeline::Stage stage(model::build_layers(spec, kTwoInputs, 0, 4), plan::Recompute::kNever, 1);
  stage.params().initialize(kSeed);
  const auto tied = model::find_tied_weights(spec, model::build_layers(spec, kTwoInputs, 0, 4));
  TiedCopies copies(tied, {{0, 4}}, plan::Placement{}, 0, nullptr, {&stage});
  copies.initialize(kSeed, spec, kTwoInputs);
  const auto values = [&stage](int layer, const std::string& name) {
    for (const auto& entry : stage.params().entries()) {
      if (entry.global_layer == layer && entry.name == name) {
        const auto all = stage.params().values().subspan(static_cast<size_t>(entry.offset),
                                                         static_cast<size_t>(entry.shape.numel()));
        return std::vector<float>(all.begin(), all.end());
      }
    }
    throw Error("no such parameter");
  };
  EXPECT_EQ(values(1, "token"), values(0, "token"));
  EXPECT_EQ(values(3, "weight"), values(0, "token"));
  EXPECT_NE(values(1, "position"), values(0, "position"));
}

TEST(TiedCopies, TheNormCountsTheMatrixOnce) {
  TiedModel m;
  kernels::KernelContext kernels;
  loss_of(m, kernels, true);
  m.copies->sum_gradients();
  const auto per_layer =
      m.stage->params().grad_square_sums_per_layer(m.copies->uncounted(*m.stage));
  double bias = 0.0;
  for (float g : m.param(2, "bias", true)) bias += static_cast<double>(g) * g;
  ASSERT_EQ(per_layer.size(), 3U);  // (layer, sum of squares) in layer order
  EXPECT_EQ(per_layer[2].first, 2);
  EXPECT_GT(bias, 0.0);
  EXPECT_EQ(per_layer[2].second, bias);  // the head keeps its bias only
  EXPECT_GT(per_layer[0].second, 0.0);   // the embedding's entry keeps the matrix
}

TEST(TiedCopies, WeightsAndStateHoldTheMatrixOnceAndRestoreBothCopies) {
  TiedModel m;
  const auto optimizer =
      optim::Optimizer::make(optim::OptimizerConfig{}, m.stage->params().num_params());  // Adam
  for (const auto& [slot, state] : optimizer->state()) std::ranges::fill(state, 0.25f);
  std::vector<std::string> names;
  for (const auto& view : stage_state(*m.stage, *optimizer, m.tied)) names.push_back(view.name);
  EXPECT_EQ(std::ranges::count(names, "layers.0.token"), 1);
  EXPECT_EQ(std::ranges::count(names, "optim.exp_avg.layers.0.token"), 1);
  EXPECT_EQ(std::ranges::count(names, "layers.2.weight"), 0);
  EXPECT_EQ(std::ranges::count(names, "optim.exp_avg.layers.2.weight"), 0);
  EXPECT_EQ(std::ranges::count(names, "layers.2.bias"), 1);

  // Weights as an export holds them: the head's copy comes from layers.0.token.
  std::vector<checkpoint::NamedTensor> file;
  for (const auto& view : stage_state(*m.stage, *optimizer, m.tied)) {
    if (!view.name.starts_with("optim.")) {
      file.push_back({view.name, view.shape, {view.values.begin(), view.values.end()}});
    }
  }
  for (auto& tensor : file) {
    if (tensor.name == "layers.0.token") std::ranges::fill(tensor.values, 0.5f);
  }
  TiedModel fresh;
  load_stage_weights(*fresh.stage, file, "w.safetensors", fresh.tied);
  EXPECT_TRUE(std::ranges::all_of(fresh.token(), [](float v) { return v == 0.5f; }));
  EXPECT_TRUE(std::ranges::all_of(fresh.head(), [](float v) { return v == 0.5f; }));

  // A file that holds the head's copy too must hold the same values there.
  file.push_back({"layers.2.weight", Shape{kVocab, kDim}, std::vector<float>(kVocab * kDim, 0.5f)});
  load_stage_weights(*fresh.stage, file, "w.safetensors", fresh.tied);
  file.back().values[3] = 0.75f;
  try {
    load_stage_weights(*fresh.stage, file, "w.safetensors", fresh.tied);
    FAIL() << "a differing head copy was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "w.safetensors: tensor layers.2.weight is tied to layers.0.token but holds other "
                 "values");
  }
}

TEST(TiedCopies, TwoChunksOfOneRankRestoreBothCopiesFromTheOneStoredMatrix) {
  // The state of the model on one stage, as a checkpoint holds it: the matrix once.
  TiedModel whole;
  const auto whole_optimizer =
      optim::Optimizer::make(optim::OptimizerConfig{}, whole.stage->params().num_params());
  std::ranges::fill(whole.stage->params().values(), 0.5f);
  for (const auto& [slot, state] : whole_optimizer->state()) std::ranges::fill(state, 0.25f);
  std::vector<checkpoint::NamedTensor> file;
  for (const auto& view : stage_state(*whole.stage, *whole_optimizer, whole.tied)) {
    file.push_back({view.name, view.shape, {view.values.begin(), view.values.end()}});
  }

  // Restored into a rank holding the embedding and the head in two chunks (zbv's rank 0).
  pipeline::Stage embedding(model::build_layers(whole.spec, Shape{kSeq}, 0, 1),
                            plan::Recompute::kNever, 1);
  pipeline::Stage head(model::build_layers(whole.spec, Shape{kSeq}, 1, 3), plan::Recompute::kNever,
                       1);
  const auto embedding_optimizer =
      optim::Optimizer::make(optim::OptimizerConfig{}, embedding.params().num_params());
  const auto head_optimizer =
      optim::Optimizer::make(optim::OptimizerConfig{}, head.params().num_params());
  int offers_taken = 0;
  load_rank_state(
      {{.stage = &embedding, .optimizer = embedding_optimizer.get()},
       {.stage = &head, .optimizer = head_optimizer.get()}},
      [&](const checkpoint::TensorDestination& into) {
        for (const auto& tensor : file) {
          if (auto values = into(tensor.name, tensor.shape)) {
            std::ranges::copy(tensor.values, values->begin());
            ++offers_taken;
          }
        }
      },
      "ckpt", whole.tied);
  EXPECT_EQ(offers_taken, std::ssize(file));  // each stored tensor read once
  // Every parameter's values and optimizer slots, entry by entry (not the padding between them).
  const auto every_entry_is = [](const pipeline::Stage& stage, std::span<const float> buffer,
                                 float expected) {
    return std::ranges::all_of(stage.params().entries(), [&](const auto& entry) {
      return std::ranges::all_of(buffer.subspan(static_cast<size_t>(entry.offset),
                                                static_cast<size_t>(entry.shape.numel())),
                                 [expected](float v) { return v == expected; });
    });
  };
  // The head's weight is not in the file: it comes from layers.0.token.
  ASSERT_EQ(std::ranges::count_if(file, [](const auto& t) { return t.name == "layers.2.weight"; }),
            0);
  EXPECT_TRUE(every_entry_is(embedding, embedding.params().values(), 0.5f));
  EXPECT_TRUE(every_entry_is(head, head.params().values(), 0.5f));
  for (const auto& [stage, optimizer] :
       {std::pair{&embedding, embedding_optimizer.get()}, std::pair{&head, head_optimizer.get()}}) {
    for (const auto& [slot, state] : optimizer->state()) {
      EXPECT_TRUE(every_entry_is(*stage, state, 0.25f)) << slot;
    }
  }
}

}  // namespace
}  // namespace mpipe::train
