// Tied weights: the layers (`tie: embedding`: later embeddings, output linears) that share the
// first embedding's token matrix [vocab, dim], found in the model and checked against it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "model/layer_spec.h"
#include "nn/layer.h"

namespace mpipe::model {

// One use of the tied matrix: a layer's parameter that holds it.
struct TiedUse {
  int layer = 0;      // global layer index
  std::string param;  // "token" of an embedding, "weight" of a linear
  bool operator==(const TiedUse&) const = default;
};

// The first embedding's parameter "token" [vocab, dim] and each copy (a later embedding's "token",
// a linear's "weight" [units, in]) hold the same matrix: each layer keeps its own copy,
// initialised from the first embedding's draw, and all take the gradients of every use summed in
// use order (train/tied_copies.h).
struct TiedWeights {
  int embedding = 0;            // global layer index of the first embedding
  std::vector<TiedUse> copies;  // the layers with `tie: embedding`, in global layer order
  Shape matrix;                 // [vocab, dim]
  static constexpr const char* kEmbeddingParam = "token";  // an embedding's [vocab, dim]
  static constexpr const char* kHeadParam = "weight";      // a linear's [units, in]
  bool operator==(const TiedWeights&) const = default;

  // Every use, in the order their gradients are summed: the first embedding, then the copies
  // (global layer order, so the same for every layout).
  std::vector<TiedUse> uses() const;
  // Whether parameter `param` of global layer `layer` is one of the copies.
  bool is_copy(int layer, const std::string& param) const;
};

// The tie exchange (train::TiedCopies::sum_gradients) moves each use's gradient in chunks of at
// most this many floats.
inline constexpr int64_t kTiedExchangeFloats = int64_t{1} << 16;
// The bytes a rank that holds `held` of `tied`'s uses receives into during the exchange (none when
// it holds none): one chunk per use held elsewhere; `on_shards` (each replica holding its shard of
// the reduced gradient), one chunk per pair of a held use and another use.
int64_t tied_exchange_bytes(const TiedWeights& tied, int held, bool on_shards = false);

// The index in layer.param_specs() of the parameter named `name`; Error when it has none.
int param_index(const nn::Layer& layer, const std::string& name);

// The model's tie, or nullopt when no layer says `tie: embedding`. `layers` are all of the
// model's layers, built from `spec`. Throws InputError naming the tie's file, line and key when
// the model has no embedding before the tied layer, when the tied layer is the first embedding,
// or when its matrix is not [vocab, dim] of the first embedding.
std::optional<TiedWeights> find_tied_weights(const ModelSpec& spec,
                                             const std::vector<std::unique_ptr<nn::Layer>>& layers);

}  // namespace mpipe::model
