// Stage forward/backward with per-micro-batch stashes and re-materialization.
#include "pipeline/stage.h"

#include <algorithm>

#include "core/error.h"
#include "core/memory_account.h"
#include "nn/elementwise.h"

namespace mpipe::pipeline {
namespace {

std::vector<nn::Layer*> raw_pointers(const std::vector<std::unique_ptr<nn::Layer>>& layers) {
  std::vector<nn::Layer*> out;
  for (const auto& layer : layers) out.push_back(layer.get());
  return out;
}

// What a layer's forward is, for the memory limit's message.
std::string_view forward_kind(const nn::LayerContext& ctx) {
  if (!ctx.training) return "evaluation";
  return ctx.recompute ? "recompute" : "forward";
}

MemoryActivity layer_activity(const nn::Layer& layer, std::string_view what) {
  return {.what = what, .layer = layer.global_index(), .kind = layer.kind()};
}

}  // namespace

size_t Stage::Stash::bytes() const {
  size_t n = bundle_bytes(input);
  for (const nn::Saved& s : saved) n += s.bytes();
  for (const auto& [value, t] : layer_inputs) n += t.bytes();
  return n;
}

size_t Stage::WeightWork::bytes() const {
  size_t n = 0;
  for (const Tensor& t : grad_outputs) n += t.bytes();
  for (const nn::Saved& s : saved) n += s.bytes();
  return n;
}

Stage::Stage(std::vector<std::unique_ptr<nn::Layer>> layers, plan::Recompute recompute,
             int num_micro_batches, plan::WeightGrads weight_grads,
             std::shared_ptr<const model::ModelGraph> graph, int weight_group)
    : layers_(std::move(layers)),
      graph_(std::move(graph)),
      recompute_(recompute),
      num_micro_batches_(num_micro_batches),
      weight_grads_(weight_grads) {
  check(!layers_.empty(), "a stage needs at least one layer");
  check(recompute_ != plan::Recompute::kAuto, "a stage needs a resolved recompute mode, not auto");
  check(weight_grads_ != plan::WeightGrads::kAuto, "a stage needs resolved weight_grads, not auto");
  groups_ = plan::weight_groups(weight_grads_, num_micro_batches_, weight_group);
  const int first = layers_.front()->global_index();
  const int last = layers_.back()->global_index();
  check(last - first + 1 == std::ssize(layers_), "a stage's layers {}..{} are not contiguous",
        first, last);
  if (!graph_) {
    graph_ = std::make_shared<const model::ModelGraph>(model::ModelGraph::chain(last + 1));
  }
  check(last < graph_->num_layers(), "a stage's layer {} is beyond the model's {}", last,
        graph_->num_layers());
  input_values_ = graph_->live_set(first);
  output_values_ = graph_->live_set(last + 1);
  auto pointers = raw_pointers(layers_);
  params_ = std::make_unique<nn::ParamBuffer>(std::span<nn::Layer* const>(pointers));
  if (weight_grads_ == plan::WeightGrads::kTree) gradient_tree_.emplace(num_micro_batches_);
}

std::span<const int> Stage::layer_inputs(size_t i) const {
  return graph_->inputs_of(layers_[i]->global_index());
}

int Stage::layer_output(size_t i) const { return graph_->output_of(layers_[i]->global_index()); }

bool Stage::is_output_value(int value) const {
  return std::ranges::find(output_values_, value) != output_values_.end();
}

bool Stage::last_read_by(int value, size_t i) const {
  return graph_->last_use(value) == layers_[i]->global_index();
}

bool Stage::read_here(int value) const { return first_reader_here(value) < layers_.size(); }

size_t Stage::first_reader_here(int value) const {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (std::ranges::find(layer_inputs(i), value) != layer_inputs(i).end()) return i;
  }
  return layers_.size();
}

void Stage::zero_grads_for_step() {
  std::vector<int> zeroed;
  for (const auto& layer : layers_) {
    if (!layer->writes_grads_first()) zeroed.push_back(layer->global_index());
  }
  params_->zero_grads_of(zeroed);
  grads_unset_ = true;
  if (gradient_tree_) gradient_tree_->clear();
}

template <typename Contribute>
void Stage::add_layer_grads(size_t i, int micro_batch, Contribute contribute) {
  if (!gradient_tree_) {
    contribute();
    return;
  }
  const int layer = layers_[i]->global_index();
  const std::span<float> grads = params_->grads_of(layer);
  gradient_tree_->open(layer, micro_batch, grads);
  contribute();
  gradient_tree_->close(layer, micro_batch, grads);
}

bool Stage::recomputes(int micro_batch) const {
  switch (recompute_) {
    case plan::Recompute::kAlways:
      return true;
    case plan::Recompute::kExceptLast:
      return micro_batch != num_micro_batches_ - 1;
    case plan::Recompute::kNever:
    case plan::Recompute::kPerLayer:  // recomputes one layer at a time, never the stage's forward
    case plan::Recompute::kAuto:
      return false;
  }
  return false;
}

nn::Forward Stage::layer_forward(size_t i, ValueTable& values, const nn::LayerContext& ctx,
                                 bool consume) {
  nn::Layer& layer = *layers_[i];
  const std::span<const int> inputs = layer_inputs(i);
  if (layer.num_reads() > 0) {
    std::vector<const Tensor*> reads;
    for (int value : inputs.subspan(1)) reads.push_back(&values.at(value));
    return layer.forward_reading(values.at(inputs.front()), reads, ctx);
  }
  if (consume)
    return layer.forward_consuming(std::move(values.extract(inputs.front()).mapped()), ctx);
  return layer.forward(values.at(inputs.front()), ctx);
}

Bundle Stage::run_forward(Bundle& input, InputUse use, const nn::LayerContext& ctx,
                          std::vector<nn::Saved>* saved, std::vector<float>* update) {
  check(input.size() == input_values_.size(), "a stage's input of {} tensors, expected {}",
        input.size(), input_values_.size());
  ValueTable values;
  for (size_t k = 0; k < input.size(); ++k) values.emplace(input_values_[k], std::move(input[k]));
  const auto is_input = [&](int value) {
    return std::ranges::find(input_values_, value) != input_values_.end();
  };
  // A value made here that nothing after layer i needs is freed after it; a layer that is the
  // last to read its main input takes it over (a layer that saves its input keeps that tensor
  // instead of a copy). The input's values are held to the end.
  const auto done_after = [&](int value, size_t i) {
    return !is_input(value) && last_read_by(value, i) && !is_output_value(value);
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    nn::Layer& layer = *layers_[i];
    const MemoryActivity activity = layer_activity(layer, forward_kind(ctx));
    const MemoryActivityScope label(activity);
    const LayerTimeScope timed(layer_times_, layer.global_index());
    const std::span<const int> inputs = layer_inputs(i);
    const bool consume =
        done_after(inputs.front(), i) && std::ranges::count(inputs, inputs.front()) == 1;
    nn::Forward result = layer_forward(i, values, ctx, consume);
    if (saved) saved->push_back(std::move(result.saved));
    if (update) {
      update->insert(update->end(), result.buffer_update.begin(), result.buffer_update.end());
    }
    for (int value : inputs) {
      if (done_after(value, i)) values.erase(value);
    }
    values.emplace(layer_output(i), std::move(result.output));
    if (layer_hook_) layer_hook_(layer.global_index(), false);
  }
  Bundle output;
  if (use != InputUse::kRecompute) {
    for (int value : output_values_) {
      Tensor& t = values.at(value);
      output.push_back(use == InputUse::kKeep && is_input(value) ? Tensor(t) : std::move(t));
    }
  }
  if (use != InputUse::kTake) {
    for (size_t k = 0; k < input.size(); ++k) input[k] = std::move(values.at(input_values_[k]));
  }
  return output;
}

Bundle Stage::forward_per_layer(Bundle input, const nn::LayerContext& ctx, ValueTable& kept,
                                std::vector<float>& update) {
  check(input.size() == input_values_.size(), "a stage's input of {} tensors, expected {}",
        input.size(), input_values_.size());
  ValueTable values;
  for (size_t k = 0; k < input.size(); ++k) values.emplace(input_values_[k], std::move(input[k]));
  for (size_t i = 0; i < layers_.size(); ++i) {
    const MemoryActivity activity = layer_activity(*layers_[i], forward_kind(ctx));
    const MemoryActivityScope label(activity);
    const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
    nn::Forward result = layer_forward(i, values, ctx, /*consume=*/false);
    update.insert(update.end(), result.buffer_update.begin(), result.buffer_update.end());
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), false);
    values.emplace(layer_output(i), std::move(result.output));
  }
  // The output's values move on, but for one that a layer here reads too (copied); the values the
  // layers read stay for their recomputes.
  Bundle output;
  for (int value : output_values_) {
    Tensor& t = values.at(value);
    output.push_back(read_here(value) ? Tensor(t) : std::move(t));
  }
  for (auto& [value, t] : values) {
    if (read_here(value)) kept.emplace(value, std::move(t));
  }
  return output;
}

Bundle Stage::forward(int micro_batch, Bundle input, const nn::LayerContext& ctx) {
  check(!stash_.contains(micro_batch), "micro-batch {} forwarded twice", micro_batch);
  check(!buffer_updates_.contains(micro_batch),
        "micro-batch {} forwarded again before its buffer updates were taken", micro_batch);
  Stash stash;
  Bundle output;
  std::vector<float> update;
  if (recompute_ == plan::Recompute::kPerLayer) {
    output = forward_per_layer(std::move(input), ctx, stash.layer_inputs, update);
  } else if (recomputes(micro_batch)) {
    output = run_forward(input, InputUse::kKeep, ctx, nullptr, &update);
    stash.input = std::move(input);
  } else {
    output = run_forward(input, InputUse::kTake, ctx, &stash.saved, &update);
  }
  check(update.empty() || std::ssize(update) == buffer_update_size(),
        "micro-batch {}: the layers' buffer updates have {} floats, expected {}", micro_batch,
        update.size(), buffer_update_size());
  if (!update.empty()) buffer_updates_.emplace(micro_batch, std::move(update));
  stored_bytes_ += stash.bytes();
  peak_stored_bytes_ = std::max(peak_stored_bytes_, stored_bytes_);
  stash_.emplace(micro_batch, std::move(stash));
  return output;
}

Bundle Stage::backward(int micro_batch, Bundle grad_output, const nn::LayerContext& ctx) {
  auto it = stash_.find(micro_batch);
  check(it != stash_.end(), "backward of micro-batch {} before its forward", micro_batch);
  Stash stash = std::move(it->second);
  stash_.erase(it);
  stored_bytes_ -= stash.bytes();
  return backward_layers(stash, std::move(grad_output), ctx, micro_batch, nullptr);
}

Bundle Stage::backward_input(int micro_batch, Bundle grad_output, const nn::LayerContext& ctx) {
  auto it = stash_.find(micro_batch);
  check(it != stash_.end(), "backward of micro-batch {} before its forward", micro_batch);
  check(!weight_work_.contains(micro_batch), "micro-batch {}'s weight gradients are pending",
        micro_batch);
  Stash stash = std::move(it->second);
  stash_.erase(it);
  stored_bytes_ -= stash.bytes();
  WeightWork work;
  Bundle grad_input = backward_layers(stash, std::move(grad_output), ctx, micro_batch, &work);
  stored_bytes_ += work.bytes();
  peak_stored_bytes_ = std::max(peak_stored_bytes_, stored_bytes_);
  weight_work_.emplace(micro_batch, std::move(work));
  return grad_input;
}

void Stage::backward_weight(int micro_batch, const nn::LayerContext& ctx) {
  auto it = weight_work_.find(micro_batch);
  check(it != weight_work_.end(), "weight gradients of micro-batch {} before its input gradient",
        micro_batch);
  check(it == weight_work_.begin(),
        "weight gradients of micro-batch {} before those of micro-batch {}", micro_batch,
        weight_work_.begin()->first);
  WeightWork work = std::move(it->second);
  weight_work_.erase(it);
  stored_bytes_ -= work.bytes();
  size_t next = 0;  // into work, whose layers descend
  for (size_t i = layers_.size(); i-- > 0;) {
    if (next < work.layers.size() && work.layers[next] == i) {
      const MemoryActivity activity = layer_activity(*layers_[i], "backward");
      const MemoryActivityScope label(activity);
      const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
      add_layer_grads(i, micro_batch, [&] {
        layers_[i]->backward_weight(work.grad_outputs[next], work.saved[next],
                                    backward_context(ctx, i, micro_batch));
      });
      work.grad_outputs[next] = Tensor();
      work.saved[next] = nn::Saved();
      ++next;
    }
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
}

std::vector<Tensor> Stage::layer_backward(size_t i, Tensor grad, nn::Saved& saved,
                                          const nn::LayerContext& ctx, int micro_batch,
                                          WeightWork* work) {
  const MemoryActivity activity = layer_activity(*layers_[i], "backward");
  const MemoryActivityScope label(activity);
  const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
  nn::Layer& layer = *layers_[i];
  const nn::LayerContext layer_ctx = backward_context(ctx, i, micro_batch);
  std::vector<Tensor> grads;
  if (layer.num_reads() > 0) {
    add_layer_grads(i, micro_batch,
                    [&] { grads = layer.backward_reading(grad, saved, layer_ctx); });
  } else if (work == nullptr || !layer.splits_backward()) {
    add_layer_grads(i, micro_batch,
                    [&] { grads.push_back(layer.backward(grad, saved, layer_ctx)); });
  } else {
    grads.push_back(layer.backward_input(grad, saved, layer_ctx));
    work->layers.push_back(i);
    work->grad_outputs.push_back(std::move(grad));
    work->saved.push_back(std::move(saved));
  }
  return grads;
}

Bundle Stage::backward_layers(Stash& stash, Bundle grad_output, const nn::LayerContext& ctx,
                              int micro_batch, WeightWork* work) {
  const bool per_layer = !stash.layer_inputs.empty();
  nn::LayerContext recompute_ctx = ctx;
  recompute_ctx.recompute = true;
  if (!per_layer && stash.saved.empty()) {
    run_forward(stash.input, InputUse::kRecompute, recompute_ctx, &stash.saved);
  }
  // Each value's gradient, summed in the graph's order: the later stages' part first (it arrives
  // in grad_output), then each reading layer's, last layer first, a layer's main input before its
  // reads. Each layer's output gradient is freed once its backward returned (or kept for its
  // weight gradients).
  ValueTable grads;
  size_t next = 0;
  for (int value : output_values_) {
    if (!graph_->values()[static_cast<size_t>(value)].needs_grad()) continue;
    check(next < grad_output.size(), "a stage's output gradient of {} tensors is short",
          grad_output.size());
    grads.emplace(value, std::move(grad_output[next++]));
  }
  check(next == grad_output.size(), "a stage's output gradient of {} tensors, expected {}",
        grad_output.size(), next);
  for (size_t i = layers_.size(); i-- > 0;) {
    nn::Saved recomputed;
    if (per_layer) {
      {
        const MemoryActivity activity = layer_activity(*layers_[i], "backward");
        const MemoryActivityScope label(activity);
        const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
        recomputed = layer_forward(i, stash.layer_inputs, recompute_ctx, false).saved;
        // A value no earlier layer here reads: the layer's internals now hold what it needs.
        for (int value : layer_inputs(i)) {
          if (first_reader_here(value) == i) stash.layer_inputs.erase(value);
        }
      }
      if (layer_hook_) layer_hook_(layers_[i]->global_index(), false);
    }
    auto grad = grads.extract(layer_output(i));
    check(!grad.empty(), "layer {}'s output has no gradient", layers_[i]->global_index());
    std::vector<Tensor> input_grads =
        layer_backward(i, std::move(grad.mapped()), per_layer ? recomputed : stash.saved[i], ctx,
                       micro_batch, work);
    const std::span<const int> inputs = layer_inputs(i);
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!graph_->values()[static_cast<size_t>(inputs[k])].needs_grad()) continue;
      auto [it, first] = grads.try_emplace(inputs[k]);
      if (first) {
        it->second = std::move(input_grads.at(k));
      } else {
        nn::add_into(it->second, input_grads.at(k));
      }
    }
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
  Bundle grad_input;
  for (int value : input_values_) {
    if (!graph_->values()[static_cast<size_t>(value)].needs_grad()) continue;
    grad_input.push_back(std::move(grads.at(value)));
  }
  return grad_input;
}

nn::LayerContext Stage::backward_context(const nn::LayerContext& ctx, size_t layer,
                                         int micro_batch) const {
  nn::LayerContext layer_ctx = ctx;
  // (A main input that is data, such as the model's first layer's, needs no gradient.)
  layer_ctx.need_input_grad =
      graph_->values()[static_cast<size_t>(layer_inputs(layer).front())].needs_grad();
  layer_ctx.micro_batch = micro_batch;
  layer_ctx.micro_batches = num_micro_batches_;
  layer_ctx.batch_weight_grads = defers_grads();
  const int group = groups_.group_of(micro_batch);
  layer_ctx.weight_group_first = groups_.first(group);
  layer_ctx.weight_group_size = groups_.size_of(group);
  // (The gradient tree zeroes a layer's gradients before each micro-batch's.)
  layer_ctx.grads_unset = grads_unset_ && layers_[layer]->writes_grads_first() && !gradient_tree_;
  return layer_ctx;
}

void Stage::finish_step_grads(const nn::LayerContext& ctx, int last_micro_batch) {
  check(last_micro_batch == groups_.last(groups_.group_of(last_micro_batch)),
        "Stage::finish_step_grads: micro-batch {} ends no group of {}", last_micro_batch,
        groups_.size);
  for (size_t i = layers_.size(); i-- > 0;) {
    {
      const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
      layers_[i]->finish_step_grads(backward_context(ctx, i, last_micro_batch));
    }
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
}

Bundle Stage::evaluate(Bundle& input, const nn::LayerContext& ctx) {
  return run_forward(input, InputUse::kKeep, ctx, nullptr);
}

int64_t Stage::buffer_update_size() const {
  int64_t size = 0;
  for (const auto& layer : layers_) size += layer->buffer_update_size();
  return size;
}

std::vector<float> Stage::take_buffer_updates() {
  std::vector<float> updates;
  for (const auto& [micro_batch, update] : buffer_updates_) {
    updates.insert(updates.end(), update.begin(), update.end());
  }
  buffer_updates_.clear();
  return updates;
}

void Stage::apply_buffer_updates(std::span<const float> updates) {
  const auto size = static_cast<size_t>(buffer_update_size());
  check(size > 0 ? updates.size() % size == 0 : updates.empty(),
        "Stage::apply_buffer_updates: {} floats are not whole updates of {}", updates.size(), size);
  for (; !updates.empty(); updates = updates.subspan(size)) {
    std::span<const float> update = updates.first(size);
    for (const auto& layer : layers_) {
      const auto layer_size = static_cast<size_t>(layer->buffer_update_size());
      layer->apply_buffer_update(update.first(layer_size));
      update = update.subspan(layer_size);
    }
  }
}

}  // namespace mpipe::pipeline
