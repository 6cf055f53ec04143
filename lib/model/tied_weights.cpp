// Finding and checking the tie between the first embedding and the layers that share its matrix.
#include "model/tied_weights.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::model {
namespace {

Shape param_shape(const nn::Layer& layer, const std::string& name) {
  return layer.param_specs()[static_cast<size_t>(param_index(layer, name))].shape;
}

}  // namespace

int64_t tied_exchange_bytes(const TiedWeights& tied, int held, bool on_shards) {
  const auto uses = static_cast<int64_t>(tied.uses().size());
  const int64_t chunks = on_shards ? held * (uses - 1) : uses - held;
  if (held == 0 || chunks <= 0) return 0;
  return chunks * std::min(kTiedExchangeFloats, tied.matrix.numel()) *
         static_cast<int64_t>(sizeof(float));
}

std::vector<TiedUse> TiedWeights::uses() const {
  std::vector<TiedUse> all{{.layer = embedding, .param = kEmbeddingParam}};
  all.insert(all.end(), copies.begin(), copies.end());
  return all;
}

bool TiedWeights::is_copy(int layer, const std::string& param) const {
  return std::ranges::any_of(
      copies, [&](const TiedUse& use) { return use.layer == layer && use.param == param; });
}

int param_index(const nn::Layer& layer, const std::string& name) {
  const std::vector<nn::ParamSpec> specs = layer.param_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return static_cast<int>(i);
  }
  throw Error(
      fmt::format("layer {} ({}) has no parameter '{}'", layer.global_index(), layer.kind(), name));
}

std::optional<TiedWeights> find_tied_weights(
    const ModelSpec& spec, const std::vector<std::unique_ptr<nn::Layer>>& layers) {
  check(layers.size() == spec.layers.size(), "find_tied_weights: {} layers for {} specs",
        layers.size(), spec.layers.size());
  std::optional<int> embedding;
  std::optional<TiedWeights> tied;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    const auto tie = layer.attrs.find("tie");
    const bool first_embedding = layer.kind == "embedding" && !embedding;
    if (first_embedding) embedding = static_cast<int>(i);
    if (tie == layer.attrs.end()) continue;
    const std::string where = tie->second.where.prefix();
    check_input(!first_embedding,
                "{}: the first embedding holds the tied matrix; tie later embeddings and "
                "linears to it",
                where);
    check_input(embedding.has_value(),
                "{}: ties the weight to an embedding, but no embedding layer comes before it",
                where);
    const std::string& owner = spec.layers[static_cast<size_t>(*embedding)].where.path;
    const Shape matrix = param_shape(*layers[static_cast<size_t>(*embedding)],
                                     TiedWeights::kEmbeddingParam);  // [vocab, dim]
    const bool linear = layer.kind == "linear";
    const char* param = linear ? TiedWeights::kHeadParam : TiedWeights::kEmbeddingParam;
    const Shape shape = param_shape(*layers[i], param);  // [units, in] or [vocab, dim]
    if (linear) {
      check_input(shape[0] == matrix[0],
                  "{}: a tied linear needs units equal to the embedding's vocab ({}, {}), got {}",
                  where, matrix[0], owner, shape[0]);
      check_input(shape[1] == matrix[1],
                  "{}: a tied linear needs an input width equal to the embedding's dim ({}, {}), "
                  "got {}",
                  where, matrix[1], owner, shape[1]);
    } else {
      check_input(shape[0] == matrix[0],
                  "{}: a tied embedding needs the first embedding's vocab ({}, {}), got {}", where,
                  matrix[0], owner, shape[0]);
      check_input(shape[1] == matrix[1],
                  "{}: a tied embedding needs the first embedding's dim ({}, {}), got {}", where,
                  matrix[1], owner, shape[1]);
    }
    if (!tied) tied = TiedWeights{.embedding = *embedding, .copies = {}, .matrix = matrix};
    tied->copies.push_back({.layer = static_cast<int>(i), .param = param});
  }
  return tied;
}

}  // namespace mpipe::model
