// Finding and checking the tie between the first embedding and the output linear.
#include "model/tied_weights.h"

#include <fmt/format.h>

#include "core/error.h"

namespace mpipe::model {

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
    if (layer.kind == "embedding" && !embedding) embedding = static_cast<int>(i);
    const auto tie = layer.attrs.find("tie");
    if (layer.kind != "linear" || tie == layer.attrs.end()) continue;
    const std::string where = tie->second.where.prefix();
    check_input(embedding.has_value(),
                "{}: ties the weight to an embedding, but no embedding layer comes before it",
                where);
    check_input(!tied, "{}: only one layer may tie its weight to the embedding; {} already does",
                where, spec.layers[static_cast<size_t>(tied ? tied->head : 0)].where.path);
    const nn::Layer& source = *layers[static_cast<size_t>(*embedding)];
    const Shape matrix =  // [vocab, dim]
        source.param_specs()[static_cast<size_t>(param_index(source, TiedWeights::kEmbeddingParam))]
            .shape;
    const Shape weight =  // [units, in]
        layers[i]
            ->param_specs()[static_cast<size_t>(param_index(*layers[i], TiedWeights::kHeadParam))]
            .shape;
    check_input(weight[0] == matrix[0],
                "{}: a tied linear needs units equal to the embedding's vocab ({}, {}), got {}",
                where, matrix[0], spec.layers[static_cast<size_t>(*embedding)].where.path,
                weight[0]);
    check_input(weight[1] == matrix[1],
                "{}: a tied linear needs an input width equal to the embedding's dim ({}, {}), "
                "got {}",
                where, matrix[1], spec.layers[static_cast<size_t>(*embedding)].where.path,
                weight[1]);
    tied = TiedWeights{.embedding = *embedding, .head = static_cast<int>(i)};
  }
  return tied;
}

}  // namespace mpipe::model
