// The walk over a stage's value and gradient tables, as pipeline::Stage fills and empties them.
#include "plan/stage_values.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace mpipe::plan {

ValueCosts value_costs(const model::ModelPlan& plan) {
  const model::ModelGraph& graph = plan.graph;
  ValueCosts costs;
  if (graph.is_chain()) return costs;
  for (int v = 0; v < static_cast<int>(graph.values().size()); ++v) {
    const model::GraphValue& value = graph.values()[static_cast<size_t>(v)];
    costs.values.push_back({.bytes = static_cast<double>(plan.value_shape(v).numel()) *
                                     static_cast<double>(sizeof(float)),
                            .producer = value.producer,
                            .needs_grad = value.needs_grad(),
                            .last_use = graph.last_use(v)});
  }
  for (int layer = 0; layer < graph.num_layers(); ++layer) {
    const std::span<const int> inputs = graph.inputs_of(layer);
    costs.layer_inputs.emplace_back(inputs.begin(), inputs.end());
  }
  for (int cut = 0; cut <= graph.num_layers(); ++cut)
    costs.live_sets.push_back(graph.live_set(cut));
  return costs;
}

StageValues walk_stage(const ValueCosts& values, int begin, int end,
                       const std::function<double(double bytes_per_example)>& block) {
  check(!values.empty() && 0 <= begin && begin < end &&
            end < static_cast<int>(values.live_sets.size()),
        "walk_stage: layers [{}, {}) of a graph of {} cuts", begin, end, values.live_sets.size());
  const auto value = [&](int v) -> const ValueCosts::Value& {
    return values.values.at(static_cast<size_t>(v));
  };
  const auto blocks = [&](const auto& set) {
    double sum = 0.0;
    for (int v : set) sum += block(value(v).bytes);
    return sum;
  };
  // A message: the one tensor itself, or the tensors packed into one (pipeline::pack).
  const auto message = [&](const std::vector<int>& set) {
    double bytes = 0.0;
    for (int v : set) bytes += value(v).bytes;
    return set.empty() ? 0.0 : block(bytes);
  };
  const auto with_grads = [&](const std::vector<int>& set) {
    std::vector<int> grads;
    std::ranges::copy_if(set, std::back_inserter(grads),
                         [&](int v) { return value(v).needs_grad; });
    return grads;
  };
  const std::vector<int>& in = values.live_sets[static_cast<size_t>(begin)];
  const std::vector<int>& out = values.live_sets[static_cast<size_t>(end)];
  const auto layer_inputs = [&](int layer) -> const std::vector<int>& {
    return values.layer_inputs.at(static_cast<size_t>(layer));
  };
  const auto output_of = [&](int layer) {
    return static_cast<int>(values.values.size() - values.layer_inputs.size()) + layer;
  };
  const auto contains = [](const auto& set, int v) {
    return std::ranges::find(set, v) != set.end();
  };

  StageValues walk;
  walk.input = blocks(in);
  walk.input_message = message(in);
  walk.input_grads = blocks(with_grads(in));
  walk.input_grad_message = message(with_grads(in));
  walk.output = blocks(out);
  walk.output_message = message(out);
  walk.output_grads = blocks(with_grads(out));
  walk.output_grad_message = message(with_grads(out));
  const int first_main = layer_inputs(begin).front();
  walk.input_beside_main =
      walk.input - (contains(in, first_main) ? block(value(first_main).bytes) : 0.0);

  // Forward (Stage::run_forward): the input's values are held to the end; a value made here is
  // freed after its last reader unless the stage hands it on, and that reader is handed it as its
  // main input when it reads it once.
  std::set<int> table(in.begin(), in.end());
  std::set<int> read_before;  // values a layer of the stage before this one consumes
  for (int layer = begin; layer < end; ++layer) {
    const std::vector<int>& inputs = layer_inputs(layer);
    const int main = inputs.front();
    const auto done_after = [&](int v) {
      return !contains(in, v) && value(v).last_use == layer && !contains(out, v);
    };
    walk.consumed.push_back(done_after(main) && std::ranges::count(inputs, main) == 1);
    double held = 0.0;
    for (int v : table) {
      if (v != main && !contains(in, v)) held += block(value(v).bytes);
    }
    walk.forward_held.push_back(held);
    double first = 0.0;
    for (int v : std::set<int>(inputs.begin(), inputs.end())) {
      if (!read_before.contains(v)) first += block(value(v).bytes);
    }
    walk.first_kept.push_back(first);
    read_before.insert(inputs.begin(), inputs.end());
    for (int v : inputs) {
      if (done_after(v)) table.erase(v);
    }
    table.insert(output_of(layer));
  }
  // Per-layer recompute's first forward (Stage::forward_per_layer) frees nothing before its end.
  double made = walk.input;
  for (int layer = begin; layer < end; ++layer) {
    walk.per_layer_forward_held.push_back(made);
    made += block(value(output_of(layer)).bytes);
  }
  // Backward (Stage::backward_layers): one gradient per value, from the output's and then from each
  // reader, last layer first, until its producer's backward takes it (or the stage's end). The
  // gradients a layer returns (its main input's and its reads') are its own backward's until the
  // table takes them after it.
  std::set<int> grads;
  for (int v : with_grads(out)) grads.insert(v);
  walk.backward_held.resize(static_cast<size_t>(end - begin));
  for (int layer = end; layer-- > begin;) {
    grads.erase(output_of(layer));
    walk.backward_held[static_cast<size_t>(layer - begin)] = blocks(grads);
    for (int v : layer_inputs(layer)) {
      if (value(v).needs_grad) grads.insert(v);
    }
  }
  return walk;
}

}  // namespace mpipe::plan
