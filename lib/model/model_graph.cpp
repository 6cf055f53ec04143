// The model graph's checks and live sets.
#include "model/model_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "core/error.h"

namespace mpipe::model {
namespace {

[[noreturn]] void fail(const SourceRef& where, const std::string& message) {
  throw InputError(fmt::format("{}: {}", where.prefix(), message));
}

}  // namespace

ModelGraph::ModelGraph(const ModelSpec& spec, std::span<const std::string> inputs)
    : num_inputs_(static_cast<int>(inputs.size())) {
  const int num_layers = static_cast<int>(spec.layers.size());
  // Every value, and every name it is known by.
  std::map<std::string, int> named;
  for (const std::string& input : inputs) {
    named.emplace(input, static_cast<int>(values_.size()));
    values_.push_back({.name = input, .producer = -1});
  }
  std::map<std::string, int> saver;  // name -> the layer that saves it, for "before ... saves"
  for (int i = 0; i < num_layers; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<size_t>(i)];
    if (layer.save) saver.emplace(layer.save->name, i);
    values_.push_back({.name = layer.save ? layer.save->name : "", .producer = i});
  }
  const auto value_named = [&](const ValueRef& ref) {
    if (auto it = named.find(ref.name); it != named.end()) return it->second;
    if (auto it = saver.find(ref.name); it != saver.end()) {
      fail(ref.where, fmt::format("reads '{}' before {} saves it", ref.name,
                                  spec.layers[static_cast<size_t>(it->second)].where.path));
    }
    fail(ref.where,
         fmt::format("no earlier layer saves '{}', and no data input is called that", ref.name));
  };

  layer_inputs_.resize(static_cast<size_t>(num_layers));
  std::map<int, const ValueRef*> read_by_name;  // value -> a read or input that names it
  for (int i = 0; i < num_layers; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<size_t>(i)];
    if (layer.has_edges()) chain_ = false;
    std::vector<int>& consumed = layer_inputs_[static_cast<size_t>(i)];
    if (layer.input) {
      consumed.push_back(value_named(*layer.input));
      read_by_name.emplace(consumed.back(), &*layer.input);
      if (i > 0 && !spec.layers[static_cast<size_t>(i - 1)].save) {
        fail(layer.input->where,
             fmt::format("the output of {} is never used (this layer's input is '{}'): save it "
                         "for a later layer, or remove this input",
                         spec.layers[static_cast<size_t>(i - 1)].where.path, layer.input->name));
      }
    } else {
      const auto data = named.find(kDataInputName);
      if (i == 0 && data == named.end()) {
        fail(layer.where,
             fmt::format("the data has no input called '{}' (its inputs: {}): say which one this "
                         "layer takes with `input:`",
                         kDataInputName, fmt::join(inputs, ", ")));
      }
      consumed.push_back(i == 0 ? data->second : output_of(i - 1));
    }
    for (const ValueRef& read : layer.reads) {
      const int value = value_named(read);
      if (std::find(consumed.begin() + 1, consumed.end(), value) != consumed.end()) {
        fail(read.where, fmt::format("reads '{}' twice", read.name));
      }
      consumed.push_back(value);
      read_by_name.emplace(value, &read);
    }
    if (layer.save) {
      // Saving a name again binds it to this output from the next layer on (a residual stream
      // through a `repeat:` block); the earlier value must have been read by then.
      if (auto it = named.find(layer.save->name); it != named.end()) {
        const GraphValue& before = values_[static_cast<size_t>(it->second)];
        if (before.producer < 0) {
          fail(layer.save->where,
               fmt::format("'{}' is the name of a data input", layer.save->name));
        }
        if (!read_by_name.contains(it->second)) {
          fail(spec.layers[static_cast<size_t>(before.producer)].save->where,
               fmt::format("no layer reads '{}' before {} saves it again", layer.save->name,
                           layer.where.path));
        }
      }
      named.insert_or_assign(layer.save->name, output_of(i));
    }
  }
  // A name's last save may go unread when an earlier one was read: the last block of a `repeat:`
  // saves its residual stream for a next block that is not there.
  for (int i = 0; i < num_layers; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<size_t>(i)];
    if (!layer.save || saver.at(layer.save->name) < i) continue;
    if (!read_by_name.contains(output_of(i))) {
      fail(layer.save->where, fmt::format("no later layer reads '{}'", layer.save->name));
    }
  }

  last_use_.assign(values_.size(), -1);
  for (int i = 0; i < num_layers; ++i) {
    for (int value : layer_inputs_[static_cast<size_t>(i)]) {
      last_use_[static_cast<size_t>(value)] = i;
    }
  }
  if (num_layers > 0) last_use_.back() = num_layers;  // the loss reads the model's output
}

ModelGraph ModelGraph::chain(int num_layers) {
  ModelSpec spec;
  spec.layers.resize(static_cast<size_t>(num_layers));
  const std::string inputs[] = {kDataInputName};
  return ModelGraph(spec, inputs);
}

std::span<const int> ModelGraph::inputs_of(int layer) const {
  check(0 <= layer && layer < num_layers(), "layer {} of {}", layer, num_layers());
  return layer_inputs_[static_cast<size_t>(layer)];
}

std::vector<int> ModelGraph::live_set(int cut) const {
  check(0 <= cut && cut <= num_layers() && num_layers() > 0, "cut {} of a model of {} layers", cut,
        num_layers());
  const auto live = [&](int value) {
    return values_[static_cast<size_t>(value)].producer < cut &&
           last_use_[static_cast<size_t>(value)] >= cut;
  };
  std::vector<int> set;
  const int main = cut == 0 ? layer_inputs_.front().front() : output_of(cut - 1);
  if (live(main)) set.push_back(main);
  for (int value = 0; value < static_cast<int>(values_.size()); ++value) {
    if (value != main && live(value)) set.push_back(value);
  }
  return set;
}

std::string ModelGraph::label(int value) const {
  const GraphValue& v = values_.at(static_cast<size_t>(value));
  return v.name.empty() ? fmt::format("layers.{}", v.producer) : v.name;
}

}  // namespace mpipe::model
