// The checks of a model against what its dataset provides.
#include "train/data_contract.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "core/error.h"
#include "model/layer_attrs.h"
#include "model/layer_options.h"

namespace mpipe::train {
namespace {

// Token ids go into an embedding, which takes a data input (the first layer's, or one it names
// with `input:`), with a row for every id that input holds.
void check_token_inputs(const model::ModelSpec& spec, const model::ModelPlan& plan,
                        const data::DataSchema& data) {
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const model::LayerSpec& layer = spec.layers[i];
    if (layer.kind != "embedding") continue;
    const int value = plan.graph.inputs_of(static_cast<int>(i)).front();
    check_input(!plan.graph.values()[static_cast<size_t>(value)].needs_grad(),
                "{} (embedding): takes token ids, which only the data provides; it must be the "
                "model's first layer, or name a data input with `input:`",
                layer.where.prefix());
    const data::DataInput& input = data.inputs.at(static_cast<size_t>(value));
    check_input(input.vocab > 0,
                "{} (embedding): takes token ids, but the data ({}) provides real values",
                layer.where.prefix(), data.name);
    model::LayerAttrs attrs(layer);
    const int64_t vocab = model::read_embedding(attrs, input.shape).vocab;
    check_input(vocab >= input.vocab,
                "{}: {} is smaller than the data's vocabulary of {} token ids ({})",
                layer.attrs.at("vocab").where.prefix(), vocab, input.vocab, data.name);
  }
}

// The last layer's output against the targets, for the model's loss.
void check_outputs(const model::ModelSpec& spec, const model::ModelPlan& plan,
                   const data::DataSchema& data) {
  const std::string loss_where = spec.loss_where.prefix();
  const std::string head =
      spec.layers.empty()
          ? spec.where.prefix()
          : fmt::format("{} ({})", spec.layers.back().where.prefix(), spec.layers.back().kind);
  const Shape& output = plan.layers.empty() ? plan.inputs.front().shape : plan.layers.back().output;
  if (spec.loss == "mse") {
    check_input(data.classes == 0,
                "{}: mse needs real-valued targets, but the data ({}) has class labels ({} "
                "classes); use cross_entropy",
                loss_where, data.name, data.classes);
    check_input(output.numel() == data.target.numel(),
                "{}: outputs {} values per example, but the data's ({}) targets have {}", head,
                output.numel(), data.name, data.target.numel());
    // An image target (denoising) pairs each output value with the pixel at its place.
    check_input(data.target.rank() < 2 || output == data.target,
                "{}: outputs {} per example, but the data's ({}) targets are {}", head, output,
                data.name, data.target);
    return;
  }
  check_input(data.classes > 0,
              "{}: {} needs class labels, but the data ({}) has real-valued targets; use mse",
              loss_where, spec.loss, data.name);
  // One score per class for each target: [...target, classes].
  std::vector<int64_t> expected = data.target.dims();
  expected.push_back(data.classes);
  if (output == Shape(expected)) return;
  const bool scores_per_target =
      output.rank() == static_cast<int>(expected.size()) &&
      std::equal(expected.begin(), expected.end() - 1, output.dims().begin());
  if (scores_per_target) {
    throw InputError(fmt::format("{}: outputs {} classes, but the data ({}) has {}", head,
                                 output.dims().back(), data.name, data.classes));
  }
  throw InputError(fmt::format(
      "{}: outputs {} per example, but {} on the data ({}) needs {}: a score for each of its {} "
      "classes per target",
      head, output, spec.loss, data.name, Shape(expected), data.classes));
}

}  // namespace

// Data with one input names it as the graph's default first input (layer 0 without `input:`).
static_assert(std::string_view(data::kMainInputName) == model::kDataInputName);

model::ModelInputs model_inputs(const data::Dataset& data) {
  model::ModelInputs inputs;
  for (const data::DataInput& input : data.data_inputs()) {
    inputs.push_back({.name = input.name, .shape = input.shape});
  }
  return inputs;
}

void check_model_fits_data(const model::ModelSpec& spec, const model::ModelPlan& plan,
                           const data::DataSchema& data) {
  check_token_inputs(spec, plan, data);
  check_outputs(spec, plan, data);
}

}  // namespace mpipe::train
