// Stage forward/backward with per-micro-batch stashes and re-materialization.
#include "pipeline/stage.h"

#include <algorithm>

#include "core/error.h"
#include "core/memory_account.h"

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
  size_t n = input.bytes();
  for (const nn::Saved& s : saved) n += s.bytes();
  for (const Tensor& t : layer_inputs) n += t.bytes();
  return n;
}

size_t Stage::WeightWork::bytes() const {
  size_t n = 0;
  for (const Tensor& t : grad_outputs) n += t.bytes();
  for (const nn::Saved& s : saved) n += s.bytes();
  return n;
}

Stage::Stage(std::vector<std::unique_ptr<nn::Layer>> layers, Recompute recompute,
             int num_micro_batches, WeightGrads weight_grads)
    : layers_(std::move(layers)),
      recompute_(recompute),
      num_micro_batches_(num_micro_batches),
      weight_grads_(weight_grads) {
  check(!layers_.empty(), "a stage needs at least one layer");
  check(recompute_ != Recompute::kAuto, "a stage needs a resolved recompute mode, not auto");
  check(weight_grads_ != WeightGrads::kAuto, "a stage needs resolved weight_grads, not auto");
  auto pointers = raw_pointers(layers_);
  params_ = std::make_unique<nn::ParamBuffer>(std::span<nn::Layer* const>(pointers));
  if (weight_grads_ == WeightGrads::kTree) gradient_tree_.emplace(num_micro_batches_);
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
    case Recompute::kAlways:
      return true;
    case Recompute::kExceptLast:
      return micro_batch != num_micro_batches_ - 1;
    case Recompute::kNever:
    case Recompute::kPerLayer:  // recomputes one layer at a time, never the stage's forward
    case Recompute::kAuto:
      return false;
  }
  return false;
}

Tensor Stage::run_forward(const Tensor& input, const nn::LayerContext& ctx,
                          std::vector<nn::Saved>* saved, std::vector<float>* update) {
  // Each layer after the first takes its predecessor's output, which nothing else needs: a layer
  // that saves its input keeps that tensor instead of a copy.
  Tensor current;
  for (size_t i = 0; i < layers_.size(); ++i) {
    nn::Layer& layer = *layers_[i];
    const MemoryActivity activity = layer_activity(layer, forward_kind(ctx));
    const MemoryActivityScope label(activity);
    const LayerTimeScope timed(layer_times_, layer.global_index());
    nn::Forward result =
        i == 0 ? layer.forward(input, ctx) : layer.forward_consuming(std::move(current), ctx);
    if (saved) saved->push_back(std::move(result.saved));
    if (update) {
      update->insert(update->end(), result.buffer_update.begin(), result.buffer_update.end());
    }
    current = std::move(result.output);
    if (layer_hook_) layer_hook_(layer.global_index(), false);
  }
  return current;
}

Tensor Stage::forward_per_layer(Tensor input, const nn::LayerContext& ctx,
                                std::vector<Tensor>& inputs, std::vector<float>& update) {
  inputs.reserve(layers_.size());
  inputs.push_back(std::move(input));
  for (size_t i = 0;; ++i) {
    const MemoryActivity activity = layer_activity(*layers_[i], forward_kind(ctx));
    const MemoryActivityScope label(activity);
    const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
    nn::Forward result = layers_[i]->forward(inputs.back(), ctx);
    update.insert(update.end(), result.buffer_update.begin(), result.buffer_update.end());
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), false);
    if (i + 1 == layers_.size()) return std::move(result.output);
    inputs.push_back(std::move(result.output));
  }
}

Tensor Stage::forward(int micro_batch, Tensor input, const nn::LayerContext& ctx) {
  check(!stash_.contains(micro_batch), "micro-batch {} forwarded twice", micro_batch);
  check(!buffer_updates_.contains(micro_batch),
        "micro-batch {} forwarded again before its buffer updates were taken", micro_batch);
  Stash stash;
  Tensor output;
  std::vector<float> update;
  if (recompute_ == Recompute::kPerLayer) {
    output = forward_per_layer(std::move(input), ctx, stash.layer_inputs, update);
  } else if (recomputes(micro_batch)) {
    output = run_forward(input, ctx, nullptr, &update);
    stash.input = std::move(input);
  } else {
    output = run_forward(input, ctx, &stash.saved, &update);
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

Tensor Stage::backward(int micro_batch, Tensor grad_output, const nn::LayerContext& ctx) {
  auto it = stash_.find(micro_batch);
  check(it != stash_.end(), "backward of micro-batch {} before its forward", micro_batch);
  Stash stash = std::move(it->second);
  stash_.erase(it);
  stored_bytes_ -= stash.bytes();
  return backward_layers(stash, std::move(grad_output), ctx, micro_batch, nullptr);
}

Tensor Stage::backward_input(int micro_batch, Tensor grad_output, const nn::LayerContext& ctx) {
  auto it = stash_.find(micro_batch);
  check(it != stash_.end(), "backward of micro-batch {} before its forward", micro_batch);
  check(!weight_work_.contains(micro_batch), "micro-batch {}'s weight gradients are pending",
        micro_batch);
  Stash stash = std::move(it->second);
  stash_.erase(it);
  stored_bytes_ -= stash.bytes();
  WeightWork work;
  Tensor grad_input = backward_layers(stash, std::move(grad_output), ctx, micro_batch, &work);
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

Tensor Stage::layer_backward(size_t i, Tensor grad, nn::Saved& saved, const nn::LayerContext& ctx,
                             int micro_batch, WeightWork* work) {
  const MemoryActivity activity = layer_activity(*layers_[i], "backward");
  const MemoryActivityScope label(activity);
  const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
  nn::Layer& layer = *layers_[i];
  const nn::LayerContext layer_ctx = backward_context(ctx, i, micro_batch);
  if (work == nullptr || !layer.splits_backward()) {
    Tensor grad_input;
    add_layer_grads(i, micro_batch, [&] { grad_input = layer.backward(grad, saved, layer_ctx); });
    return grad_input;
  }
  Tensor grad_input = layer.backward_input(grad, saved, layer_ctx);
  work->layers.push_back(i);
  work->grad_outputs.push_back(std::move(grad));
  work->saved.push_back(std::move(saved));
  return grad_input;
}

Tensor Stage::backward_layers(Stash& stash, Tensor grad_output, const nn::LayerContext& ctx,
                              int micro_batch, WeightWork* work) {
  if (!stash.layer_inputs.empty()) {
    return backward_per_layer(stash, std::move(grad_output), ctx, micro_batch, work);
  }
  if (stash.saved.empty()) {
    nn::LayerContext recompute_ctx = ctx;
    recompute_ctx.recompute = true;
    run_forward(stash.input, recompute_ctx, &stash.saved);
  }
  // Each layer's output gradient is freed once its backward returned the input gradient (or
  // kept for its weight gradients).
  Tensor grad = std::move(grad_output);
  for (size_t i = layers_.size(); i-- > 0;) {
    grad = layer_backward(i, std::move(grad), stash.saved[i], ctx, micro_batch, work);
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
  return grad;
}

Tensor Stage::backward_per_layer(Stash& stash, Tensor grad_output, const nn::LayerContext& ctx,
                                 int micro_batch, WeightWork* work) {
  nn::LayerContext recompute_ctx = ctx;
  recompute_ctx.recompute = true;
  Tensor grad = std::move(grad_output);
  for (size_t i = layers_.size(); i-- > 0;) {
    nn::Saved saved;
    {
      const MemoryActivity activity = layer_activity(*layers_[i], "backward");
      const MemoryActivityScope label(activity);
      const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
      saved = layers_[i]->forward(stash.layer_inputs[i], recompute_ctx).saved;
      stash.layer_inputs[i] = Tensor();  // its internals now hold what backward needs
    }
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), false);
    grad = layer_backward(i, std::move(grad), saved, ctx, micro_batch, work);
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
  return grad;
}

nn::LayerContext Stage::backward_context(const nn::LayerContext& ctx, size_t layer,
                                         int micro_batch) const {
  nn::LayerContext layer_ctx = ctx;
  layer_ctx.need_input_grad = layers_[layer]->global_index() != 0;
  layer_ctx.micro_batch = micro_batch;
  layer_ctx.micro_batches = num_micro_batches_;
  layer_ctx.batch_weight_grads = defers_grads();
  // (The gradient tree zeroes a layer's gradients before each micro-batch's.)
  layer_ctx.grads_unset = grads_unset_ && layers_[layer]->writes_grads_first() && !gradient_tree_;
  return layer_ctx;
}

void Stage::finish_step_grads(const nn::LayerContext& ctx) {
  for (size_t i = layers_.size(); i-- > 0;) {
    {
      const LayerTimeScope timed(layer_times_, layers_[i]->global_index());
      layers_[i]->finish_step_grads(backward_context(ctx, i, num_micro_batches_ - 1));
    }
    if (layer_hook_) layer_hook_(layers_[i]->global_index(), true);
  }
}

Tensor Stage::evaluate(const Tensor& input, const nn::LayerContext& ctx) {
  return run_forward(input, ctx, nullptr);
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
