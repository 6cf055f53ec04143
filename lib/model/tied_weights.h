// Tied weights: the output linear (`tie: embedding`) that shares the first embedding's token
// matrix [vocab, dim], found in the model and checked against it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/layer_spec.h"
#include "nn/layer.h"

namespace mpipe::model {

// The embedding's parameter "token" [vocab, dim] and the head's parameter "weight" [units, in]
// hold the same matrix: each layer keeps its own copy, initialised from the embedding's draw,
// and both take the summed gradient of the two uses (train/tied_copies.h).
struct TiedWeights {
  int embedding = 0;  // global layer index of the first embedding
  int head = 0;       // global layer index of the linear with `tie: embedding`
  static constexpr const char* kEmbeddingParam = "token";  // the embedding's [vocab, dim]
  static constexpr const char* kHeadParam = "weight";      // the linear's [units, in]
  bool operator==(const TiedWeights&) const = default;
};

// The index in layer.param_specs() of the parameter named `name`; Error when it has none.
int param_index(const nn::Layer& layer, const std::string& name);

// The model's tie, or nullopt when no layer says `tie: embedding`. `layers` are all of the
// model's layers, built from `spec`. Throws InputError naming the tie's file, line and key when
// the model has no embedding, when the head's weight is not [vocab, dim] of the embedding, or
// when more than one layer ties.
std::optional<TiedWeights> find_tied_weights(const ModelSpec& spec,
                                             const std::vector<std::unique_ptr<nn::Layer>>& layers);

}  // namespace mpipe::model
