// Per-layer FLOPs and bytes: what each layer kind's forward keeps for its backward (mirrors the
// tensors lib/nn layers put in nn::Saved; tests/model/cost_model_test.cpp runs every kind and
// checks the prediction against the real forward).
#include "model/cost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/error.h"
#include "model/layer_attrs.h"
#include "model/layer_options.h"

namespace mpipe::model {
namespace {

constexpr double kFloat = sizeof(float);

// Layers whose forward_consuming keeps the input it is handed among its saved tensors.
bool keeps_consumed_input(const std::string& kind) {
  static const std::set<std::string> kinds = {"linear", "relu",      "gelu",         "tanh",
                                              "conv2d", "attention", "batch_norm2d", "layer_norm"};
  return kinds.contains(kind);
}

// Layers whose backward computes an input gradient and a weight gradient by matrix products.
bool is_matmul_like(const std::string& kind) {
  static const std::set<std::string> kinds = {
      "linear", "conv2d", "attention", "transformer_block", "residual_block", "separable_cell"};
  return kinds.contains(kind);
}

// What forward keeps, in floats, tensor by tensor (each is a block of the allocator): per
// example, per micro-batch, and bytes packed into floats.
struct Kept {
  std::vector<double> per_example_tensors = {};
  std::vector<double> fixed_tensors = {};
  double packed_bytes = 0.0;

  double per_example() const {
    return std::accumulate(per_example_tensors.begin(), per_example_tensors.end(), 0.0);
  }
  double fixed() const { return std::accumulate(fixed_tensors.begin(), fixed_tensors.end(), 0.0); }
};

// The options of an attention or Transformer block layer.
AttentionOptions attention_options(const LayerSpec& spec) {
  LayerAttrs attrs(spec);
  return spec.kind == "attention" ? read_attention(attrs) : read_transformer_block(attrs);
}

// [C, H, W] → channels, and the spatial size H·W.
double channels(const Shape& s) { return static_cast<double>(s[0]); }
double spatial(const Shape& s) { return static_cast<double>(s[1] * s[2]); }

// Residual block: per conv-bn pair of the main path the conv input and the bn's (its input,
// then mean and variance per channel), the projection's bn, and the block output.
Kept residual_block_kept(const LayerSpec& spec, const Shape& in, const Shape& out) {
  LayerAttrs attrs(spec);
  const bool bottleneck = read_residual_block(attrs).bottleneck;
  const bool projection = !(in == out);
  const double x = static_cast<double>(in.numel()), y = static_cast<double>(out.numel());
  const double c = channels(out);
  Kept kept;
  if (bottleneck) {
    const double width = c / 4.0;
    const double wide_in = width * spatial(in), wide_out = width * spatial(out);
    // conv1 input x, bn1 input; conv2 input, bn2 input; conv3 input, bn3 input.
    kept.per_example_tensors = {x, wide_in, wide_in, wide_out, wide_out, y};
    kept.fixed_tensors = {width, width, width, width, c, c};
  } else {
    // conv1 input x, bn1 input; conv2 input, bn2 input.
    kept.per_example_tensors = {x, y, y, y};
    kept.fixed_tensors = {c, c, c, c};
  }
  if (projection) {
    kept.per_example_tensors.push_back(y);
    kept.fixed_tensors.insert(kept.fixed_tensors.end(), {c, c});
  }
  kept.per_example_tensors.push_back(y);  // the block output (for the final ReLU)
  return kept;
}

// Floats forward keeps for backward, by layer kind (see each layer's forward in lib/nn).
Kept kept_by_kind(const LayerSpec& spec, const LayerPlan& plan) {
  const std::string& kind = plan.kind;
  const Shape& in = plan.input;
  const Shape& out = plan.output;
  const auto x = static_cast<double>(in.numel());
  if (kind == "linear" || kind == "relu" || kind == "gelu" || kind == "tanh" || kind == "conv2d" ||
      kind == "embedding") {
    return {.per_example_tensors = {x}};  // the input (token ids for the embedding)
  }
  if (kind == "dropout" || kind == "flatten" || kind == "avg_pool2d" || kind == "global_avg_pool") {
    return {};  // masks are regenerated from counters; the others need no input
  }
  if (kind == "batch_norm2d") {
    return {.per_example_tensors = {x}, .fixed_tensors = {channels(in), channels(in)}};
  }
  if (kind == "layer_norm") {
    const double rows = x / static_cast<double>(in[in.rank() - 1]);
    return {.per_example_tensors = {x, rows, rows}};  // input, mean and variance per row
  }
  if (kind == "max_pool2d") {
    // oneDNN's workspace: the position of each maximum, u8 while the window has < 256 taps.
    LayerAttrs attrs(spec);
    const int64_t taps = read_max_pool2d(attrs).kernel;
    const double bytes_per_output = taps * taps < 256 ? 1.0 : 4.0;
    return {.packed_bytes = static_cast<double>(out.numel()) * bytes_per_output};
  }
  if (kind == "attention" || kind == "transformer_block") {
    const AttentionOptions options = attention_options(spec);
    const auto heads = static_cast<double>(options.heads);
    const auto t = static_cast<double>(in[0]), d = static_cast<double>(in[1]);
    // x, q, k, v, merged heads [T, d] each, probabilities [heads, T, T].
    const double a = t * d;
    const std::vector<double> attention = {a, a, a, a, a, heads * t * t};
    if (kind == "attention") return {.per_example_tensors = attention};
    const auto ratio = static_cast<double>(options.mlp_ratio);
    // ln1 and ln2 (input, mean, variance per row), the attention's, the ln2 output, and the
    // MLP's hidden layer before and after GELU.
    Kept kept{.per_example_tensors = {a, t, t, a, t, t}};
    kept.per_example_tensors.insert(kept.per_example_tensors.end(), attention.begin(),
                                    attention.end());
    kept.per_example_tensors.insert(kept.per_example_tensors.end(), {a, ratio * a, ratio * a});
    return kept;
  }
  if (kind == "residual_block") return residual_block_kept(spec, in, out);
  if (kind == "separable_cell") {
    // Input, depthwise output [C, Ho, Wo], the bn's input [out, Ho, Wo] and statistics.
    return {
        .per_example_tensors = {x, channels(in) * spatial(out), static_cast<double>(out.numel())},
        .fixed_tensors = {channels(out), channels(out)}};
  }
  throw Error(fmt::format("cost model: no memory model for layer kind '{}'", kind));
}

// Layers made of several kernels, whose backward holds gradients of their internals.
bool is_composite(const std::string& kind) {
  static const std::set<std::string> kinds = {"attention", "transformer_block", "residual_block",
                                              "separable_cell"};
  return kinds.contains(kind);
}

// A layer's temporaries beyond its input, output, their gradients and what it saves, per example
// (see LayerCost::workspace_bytes and forward_workspace_bytes).
struct Temporaries {
  double backward = 0.0;
  double forward = 0.0;
};

// Attention and the Transformer block free each temporary as soon as it is used up, so their
// peaks follow from the order of their steps (tests/model/layer_memory_test.cpp measures them).
// Per example, in floats: an activation a = T·d, the probabilities p = heads·T² and their
// dropout mask m (p with dropout, else 0), the MLP's hidden layer h = mlp_ratio·a.
Temporaries attention_temporaries(const LayerSpec& spec, const LayerPlan& plan) {
  const AttentionOptions options = attention_options(spec);
  const auto heads = static_cast<double>(options.heads);
  const double rate = options.dropout;
  const auto t = static_cast<double>(plan.input[0]);
  const double a = t * static_cast<double>(plan.input[1]);
  const double m = rate > 0.0 ? heads * t * t : 0.0;
  // Attention's backward beside dy: dq, dk, dv and dqkv [T, 3d] while dqkv is filled, or the
  // head-split gradient, dq, dk, dv and the mask in the attention kernel; dx counts as its input.
  // Its forward peaks in the kernel with q, k, v, the probabilities, the heads' output and the
  // mask, beyond its input, output and what it saves when the mask is over 2a.
  const Temporaries attention{.backward = std::max(5.0 * a, 3.0 * a + m),
                              .forward = std::max(0.0, m - 2.0 * a)};
  if (plan.kind == "attention") return attention;
  // The block's backward beside dy: the MLP's masked dy and dhidden in fc2's backward, or the
  // residual stream's gradient dx1 beside attention's backward (its dy a masked copy of dx1);
  // its forward: the MLP output's dropout mask beside everything else.
  const auto ratio = static_cast<double>(options.mlp_ratio);
  return {.backward = std::max(ratio * a, 2.0 * a + attention.backward),
          .forward = rate > 0.0 ? a : 0.0};
}

// A residual block's backward beyond its input x and output y, per example, in floats: dy and
// the gradient of the sum (y each) stay while its conv-bn pairs run one after another, last
// first; a pair's batch norm holds the gradients of its output o (the sum's for the last pair)
// and of its conv's output (o), its conv those of o and of its input; then the projection's batch
// norm beside the main path's dx, and (the sum's gradient freed) its conv.
double residual_block_backward(const LayerSpec& spec, const Shape& in, const Shape& out) {
  LayerAttrs attrs(spec);
  const bool bottleneck = read_residual_block(attrs).bottleneck;
  const double x = static_cast<double>(in.numel()), y = static_cast<double>(out.numel());
  // Each pair's input and output sizes, first to last.
  std::vector<std::pair<double, double>> pairs;
  if (bottleneck) {
    const double width = channels(out) / 4.0;
    const double wide_in = width * spatial(in), wide_out = width * spatial(out);
    pairs = {{x, wide_in}, {wide_in, wide_out}, {wide_out, y}};
  } else {
    pairs = {{x, y}, {y, y}};
  }
  double peak = 3.0 * y;  // the last pair's batch norm: dy, the sum's gradient and its dconv
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [input, output] = pairs[i];
    if (i + 1 < pairs.size()) peak = std::max(peak, 2.0 * y + 2.0 * output);
    peak = std::max(peak, 2.0 * y + output + input);
  }
  if (!(in == out)) {
    peak = std::max({peak, 3.0 * y + x, 2.0 * y + 2.0 * x});
  } else {
    peak = std::max(peak, 2.0 * y + x);
  }
  return peak - x - y;
}

// A backward's temporaries: a residual block's pairs run one after another (see
// residual_block_backward); the other composite layers hold about what they save (the gradients
// of their internals). A forward's: none, except attention's and the Transformer block's.
Temporaries temporaries(const LayerSpec& spec, const LayerPlan& plan, const Kept& kept) {
  if (plan.kind == "attention" || plan.kind == "transformer_block") {
    return attention_temporaries(spec, plan);
  }
  if (plan.kind == "residual_block") {
    return {.backward = residual_block_backward(spec, plan.input, plan.output)};
  }
  return {.backward = is_composite(plan.kind) ? kept.per_example() : 0.0};
}

std::vector<double> scaled(std::vector<double> values, double factor) {
  for (double& v : values) v *= factor;
  return values;
}

// The smallest tensor among a layer's temporaries (workspace_bytes and forward_workspace_bytes),
// per example, in floats: an activation (input or output), or a bottleneck residual block's
// narrow conv output.
double smallest_temporary(const LayerSpec& spec, const LayerPlan& plan) {
  double smallest = static_cast<double>(std::min(plan.input.numel(), plan.output.numel()));
  LayerAttrs attrs(spec);
  if (plan.kind == "residual_block" && read_residual_block(attrs).bottleneck) {
    const double width = channels(plan.output) / 4.0;
    smallest = std::min(smallest, width * std::min(spatial(plan.input), spatial(plan.output)));
  }
  return smallest;
}

// A backward's per-channel partial sums of batch norm's weight and bias gradients
// (kernels::batch_norm_backward), in floats: [C] each, one batch norm at a time.
std::vector<double> workspace_fixed_tensors(const LayerPlan& plan) {
  if (plan.kind == "batch_norm2d") return {channels(plan.input), channels(plan.input)};
  if (plan.kind == "residual_block" || plan.kind == "separable_cell") {
    return {channels(plan.output), channels(plan.output)};  // its widest batch norm
  }
  return {};
}

double backward_factor(const LayerPlan& plan) {
  if (plan.kind == "flatten") return 0.0;
  if (!is_matmul_like(plan.kind)) return 1.0;
  return plan.index == 0 ? 1.0 : 2.0;  // the first layer computes no input gradient
}

}  // namespace

double LayerCost::kept_bytes(int64_t rows) const {
  const auto r = static_cast<double>(rows);
  const double packed = std::ceil(r * saved_packed_bytes / kFloat) * kFloat;
  return r * saved_bytes + saved_fixed_bytes + packed;
}

double LayerCost::kept_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  double bytes = allocator.block_bytes(std::ceil(r * saved_packed_bytes / kFloat) * kFloat);
  // (A cost made by hand may give the sums alone: each is then one tensor.)
  const auto or_sum = [](const std::vector<double>& tensors, double sum) {
    return tensors.empty() && sum > 0.0 ? std::vector<double>{sum} : tensors;
  };
  for (double t : or_sum(saved_tensor_bytes, saved_bytes)) bytes += allocator.block_bytes(r * t);
  for (double t : or_sum(saved_fixed_tensor_bytes, saved_fixed_bytes)) {
    bytes += allocator.block_bytes(t);
  }
  return bytes;
}

double LayerCost::forward_block_bytes(int64_t rows, bool consumed,
                                      const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  const double input = consumed && keeps_consumed_input ? 0.0 : input_bytes;
  return allocator.block_bytes(r * input) + allocator.block_bytes(r * output_bytes) +
         allocator.blocks_bytes(r * forward_workspace_bytes, r * smallest_temporary_bytes);
}

double LayerCost::backward_block_bytes(int64_t rows, const AllocatorModel& allocator) const {
  const auto r = static_cast<double>(rows);
  const double input_gradient = has_input_gradient ? input_bytes : 0.0;
  double bytes = allocator.block_bytes(r * input_gradient) +
                 allocator.block_bytes(r * output_bytes) +
                 allocator.blocks_bytes(r * workspace_bytes, r * smallest_temporary_bytes);
  for (double t : workspace_fixed_tensor_bytes) bytes += allocator.block_bytes(t);
  return bytes;
}

double LayerCost::forward_bytes(int64_t rows, bool consumed) const {
  const double input = consumed && keeps_consumed_input ? 0.0 : input_bytes;
  return static_cast<double>(rows) * (input + output_bytes + forward_workspace_bytes);
}

double LayerCost::backward_bytes(int64_t rows) const {
  const double input_gradient = has_input_gradient ? input_bytes : 0.0;
  const double fixed = std::accumulate(workspace_fixed_tensor_bytes.begin(),
                                       workspace_fixed_tensor_bytes.end(), 0.0);
  return static_cast<double>(rows) * (input_gradient + output_bytes + workspace_bytes) + fixed;
}

double LayerCost::forward_traffic_bytes() const {
  return input_bytes + output_bytes + saved_bytes + saved_packed_bytes;
}

double LayerCost::backward_traffic_bytes() const {
  // Reads what was saved and the output gradient, writes the input gradient.
  return saved_bytes + saved_packed_bytes + output_bytes + (index == 0 ? 0.0 : input_bytes);
}

LayerCost cost_of(const LayerSpec& spec, const LayerPlan& plan) {
  const Kept kept = kept_by_kind(spec, plan);
  const Temporaries temp = temporaries(spec, plan, kept);
  return LayerCost{.index = plan.index,
                   .kind = plan.kind,
                   .forward_flops = plan.forward_flops,
                   .backward_flops = plan.forward_flops * backward_factor(plan),
                   .num_params = plan.num_params,
                   .param_bytes = static_cast<double>(plan.param_bytes),
                   .buffer_bytes = static_cast<double>(plan.buffer_bytes),
                   .input_bytes = static_cast<double>(plan.input.numel()) * kFloat,
                   .output_bytes = static_cast<double>(plan.output_bytes),
                   .saved_bytes = kept.per_example() * kFloat,
                   .saved_fixed_bytes = kept.fixed() * kFloat,
                   .saved_packed_bytes = kept.packed_bytes,
                   .saved_tensor_bytes = scaled(kept.per_example_tensors, kFloat),
                   .saved_fixed_tensor_bytes = scaled(kept.fixed_tensors, kFloat),
                   .workspace_bytes = temp.backward * kFloat,
                   .forward_workspace_bytes = temp.forward * kFloat,
                   .smallest_temporary_bytes = smallest_temporary(spec, plan) * kFloat,
                   .workspace_fixed_tensor_bytes = scaled(workspace_fixed_tensors(plan), kFloat),
                   .keeps_consumed_input = keeps_consumed_input(plan.kind),
                   .has_input_gradient = plan.kind != "embedding",
                   .weight_grad_operand_bytes =
                       plan.kind == "linear" ? static_cast<double>(plan.input.numel()) * kFloat +
                                                   static_cast<double>(plan.output_bytes)
                                             : 0.0};
}

std::vector<LayerCost> layer_costs(const ModelSpec& spec, const ModelPlan& plan) {
  check(spec.layers.size() == plan.layers.size(), "layer_costs: {} specs for {} planned layers",
        spec.layers.size(), plan.layers.size());
  std::vector<LayerCost> costs;
  costs.reserve(plan.layers.size());
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    costs.push_back(cost_of(spec.layers[i], plan.layers[i]));
  }
  return costs;
}

}  // namespace mpipe::model
