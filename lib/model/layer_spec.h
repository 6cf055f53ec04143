// LayerSpec and ModelSpec: a model as the experiment file describes it, before any layer is
// built. Attributes stay generic here so new layer kinds need no change to the config parser;
// the model builder validates them per kind and reports errors with the YAML file and line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/enum_names.h"

namespace mpipe::model {

// How the weights are drawn beyond each layer's own init (model.init).
enum class ModelInit {
  kDefault,  // each layer's own
  kGpt2,     // GPT-2's: the residual output projections of every transformer_block (attention's
             // proj.weight, the MLP's fc2.weight) N(0, (0.02 / sqrt(2 · blocks))^2)
};
inline constexpr EnumNames<ModelInit, 2> kModelInitNames{
    {{"default", ModelInit::kDefault}, {"gpt2", ModelInit::kGpt2}}};

// Where a value came from, for error messages: "exp.yaml:14: model.layers[3].units".
struct SourceRef {
  std::string file;
  int line = 0;      // 1-based; 0 when unknown (e.g. a --set override)
  std::string path;  // the key path
  // "exp.yaml:14", or "--set" for a value that came from the command line.
  std::string location() const { return line == 0 ? file : file + ":" + std::to_string(line); }
  // "exp.yaml:14: model.layers[3].units", or "--set model.layers[3].units".
  std::string prefix() const { return location() + (line == 0 ? " " : ": ") + path; }
};

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

struct Attr {
  AttrValue value;
  SourceRef where;
};

// A named value on a graph edge (docs/design/graph.md, "Networks that are not a chain"): a layer's
// saved output or a data input, with where the experiment file names it.
struct ValueRef {
  std::string name;
  SourceRef where;
};

struct LayerSpec {
  std::string kind;  // "linear", "relu", "conv2d", "transformer_block", ...
  std::map<std::string, Attr> attrs;
  SourceRef where;  // the layer entry itself: model.layers[3]
  // The model graph's edges beyond the main stream (model::ModelGraph checks them):
  std::optional<ValueRef> save = std::nullopt;  // `save: NAME`: the output is also the value NAME
  std::vector<ValueRef> reads = {};  // `read: [NAME, ...]`: extra inputs after the main one
  std::optional<ValueRef> input =
      std::nullopt;  // `input: NAME`: the main input, not the last output
  bool has_edges() const { return save || !reads.empty() || input; }
};

struct ModelSpec {
  std::vector<LayerSpec> layers;  // `repeat:` blocks already expanded
  std::string loss = "cross_entropy";
  double label_smoothing = 0.0;  // cross_entropy's ε (kernels::CrossEntropyOptions)
  ModelInit init = ModelInit::kDefault;
  SourceRef loss_where;  // model.loss, or the `model:` section's line when the loss is the default
  SourceRef where;
};

}  // namespace mpipe::model
