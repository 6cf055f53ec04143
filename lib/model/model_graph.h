// ModelGraph: the named values a model's layers save and read beyond the main stream, checked
// when the model is loaded, and each cut's live set: the ordered values that cross it
// (docs/design/graph.md, "Networks that are not a chain").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/layer_spec.h"

namespace mpipe::model {

// The name of the data's one input today: layer 0's main input unless a layer says `input:`.
inline constexpr const char* kDataInputName = "input";

// One value of the graph: a data input, or a layer's output (named when the layer saves it).
// Its shape is the plan's (ModelPlan::value_shape).
struct GraphValue {
  std::string name;  // the data input's or the `save` name; "" for an unsaved layer output
  int producer = 0;  // the layer whose output it is; -1 for a data input
  // Whether its gradient flows back: a layer's output does, a data input never (the first
  // layer's input gradient is never needed; token ids have none).
  bool needs_grad() const { return producer >= 0; }
};

class ModelGraph {
 public:
  // The graph of `spec` over the data inputs named `inputs`. Throws InputError naming the file,
  // line and key of the first mistake: a read of a name no earlier layer saves, a name saved
  // twice or a data input's name saved, a save no later layer reads, a name read twice by one
  // layer, an output nothing uses.
  ModelGraph(const ModelSpec& spec, std::span<const std::string> inputs);
  ModelGraph() = default;  // no layers
  // A chain of `num_layers` layers over the one data input (what a model without edges is).
  static ModelGraph chain(int num_layers);

  int num_layers() const { return static_cast<int>(layer_inputs_.size()); }
  // Data inputs first (in the order given), then one value per layer output, in layer order.
  const std::vector<GraphValue>& values() const { return values_; }
  // The value layer `layer`'s output is.
  int output_of(int layer) const { return num_inputs_ + layer; }
  // What layer `layer` consumes: its main input first, then its reads in listed order.
  std::span<const int> inputs_of(int layer) const;
  // The live set at cut `cut` (before layer `cut`, 0 <= cut <= num_layers()): the values produced
  // before it and consumed at or after it (the last layer's output by the loss), the main stream
  // (layer cut-1's output; at cut 0 layer 0's main input) first when it is live, then the others
  // in value order. Cut 0's set is the data inputs the model reads; the last cut's, its output.
  std::vector<int> live_set(int cut) const;
  // The last layer consuming value `value` (num_layers() for the model's output: the loss's);
  // -1 for a data input nothing reads.
  int last_use(int value) const { return last_use_.at(static_cast<size_t>(value)); }
  // Whether every cut carries the main stream alone and every layer reads only it (no `save`,
  // `read` or `input`): the chain every model was before the graph.
  bool is_chain() const { return chain_; }
  // The name a plan or an error shows for a value: its own, or "layers.N" for an unsaved output.
  std::string label(int value) const;

 private:
  int num_inputs_ = 0;
  std::vector<GraphValue> values_;
  std::vector<std::vector<int>> layer_inputs_;  // per layer: main, then reads
  std::vector<int> last_use_;                   // per value: the last layer consuming it
  bool chain_ = true;
};

}  // namespace mpipe::model
