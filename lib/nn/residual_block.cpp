// ResidualBlock layer: Conv2d and BatchNorm2d sub-layers, ReLUs through the eltwise kernel, the
// shortcut sum, and one Saved holding every sub-layer's tensors without duplicates.
#include "nn/residual_block.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/eltwise.h"
#include "nn/composite.h"
#include "nn/elementwise.h"

namespace mpipe::nn {
namespace {

constexpr int64_t kBottleneckExpansion = 4;

const Shape& checked_input(const Shape& input_shape) {
  check_input(input_shape.rank() == 3 && input_shape.numel() > 0,
              "residual_block needs an input [channels, height, width], got {}", input_shape);
  return input_shape;
}

void relu_in_place(kernels::KernelContext& ctx, Tensor& t) {
  kernels::eltwise_forward(ctx, kernels::EltwiseKind::kRelu, t.data(), t.data(), t.numel());
}

}  // namespace

ResidualBlock::ResidualBlock(int global_index, const Shape& input_shape, int64_t out_channels,
                             int64_t stride, bool bottleneck)
    : Layer(global_index) {
  const Shape& input = checked_input(input_shape);
  check_input(out_channels >= 1, "residual_block: channels must be >= 1, got {}", out_channels);
  check_input(stride >= 1, "residual_block: stride must be >= 1, got {}", stride);
  if (bottleneck) {
    check_input(out_channels % kBottleneckExpansion == 0,
                "residual_block: a bottleneck block needs channels divisible by {}, got {}",
                kBottleneckExpansion, out_channels);
    const int64_t width = out_channels / kBottleneckExpansion;
    path_.push_back(make_conv_bn(input, width, 1, 1, "conv1", "bn1"));
    path_.push_back(
        make_conv_bn(path_.back().conv->output_shape(), width, 3, stride, "conv2", "bn2"));
    path_.push_back(
        make_conv_bn(path_.back().conv->output_shape(), out_channels, 1, 1, "conv3", "bn3"));
  } else {
    path_.push_back(make_conv_bn(input, out_channels, 3, stride, "conv1", "bn1"));
    path_.push_back(
        make_conv_bn(path_.back().conv->output_shape(), out_channels, 3, 1, "conv2", "bn2"));
  }
  if (stride != 1 || out_channels != input[0]) {
    shortcut_ = make_conv_bn(input, out_channels, 1, stride, "shortcut.conv", "shortcut.bn");
  }
}

ResidualBlock::ConvBn ResidualBlock::make_conv_bn(const Shape& input, int64_t out_channels,
                                                  int64_t kernel, int64_t stride,
                                                  std::string conv_name,
                                                  std::string bn_name) const {
  ConvBn pair;
  pair.conv = std::make_unique<Conv2d>(global_index(), input, out_channels, kernel, stride,
                                       /*padding=*/kernel / 2, /*dilation=*/1, /*groups=*/1,
                                       /*bias=*/false);
  pair.bn = std::make_unique<BatchNorm2d>(global_index(), pair.conv->output_shape());
  pair.conv_name = std::move(conv_name);
  pair.bn_name = std::move(bn_name);
  return pair;
}

Shape ResidualBlock::output_shape() const { return path_.back().bn->output_shape(); }

std::vector<std::pair<std::string, Layer*>> ResidualBlock::sub_layers() const {
  std::vector<const ConvBn*> pairs;
  for (const ConvBn& pair : path_) pairs.push_back(&pair);
  if (has_projection()) pairs.push_back(&shortcut_);
  std::vector<std::pair<std::string, Layer*>> out;
  for (const ConvBn* pair : pairs) {
    out.emplace_back(pair->conv_name + ".", pair->conv.get());
    out.emplace_back(pair->bn_name + ".", pair->bn.get());
  }
  return out;
}

std::vector<ParamSpec> ResidualBlock::param_specs() const {
  std::vector<ParamSpec> specs;
  for (const auto& [prefix, layer] : sub_layers()) {
    append_prefixed(specs, layer->param_specs(), prefix);
  }
  return specs;
}

std::vector<ParamSpec> ResidualBlock::buffer_specs() const {
  std::vector<ParamSpec> specs;
  for (const auto& [prefix, layer] : sub_layers()) {
    append_prefixed(specs, layer->buffer_specs(), prefix);
  }
  return specs;
}

void ResidualBlock::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                         std::vector<std::span<float>> buffers) {
  check(params.size() == param_specs().size() && grads.size() == params.size() &&
            buffers.size() == buffer_specs().size(),
        "ResidualBlock::bind: expected {} params and {} buffers", param_specs().size(),
        buffer_specs().size());
  size_t param_at = 0, buffer_at = 0;
  for (const auto& [prefix, layer] : sub_layers()) {
    const size_t num_params = layer->param_specs().size();
    const size_t num_buffers = layer->buffer_specs().size();
    layer->bind(views(params, param_at, num_params), views(grads, param_at, num_params),
                views(buffers, buffer_at, num_buffers));
    param_at += num_params;
    buffer_at += num_buffers;
  }
}

size_t ResidualBlock::num_saved() const {
  return path_.size() * kSavedPerConvBn + (has_projection() ? BatchNorm2d::kSavedTensors : 0) + 1;
}

size_t ResidualBlock::num_weight_kept() const {
  return path_.size() * kWeightKeptPerConvBn + (has_projection() ? kWeightKeptShortcut : 0);
}

Forward ResidualBlock::forward(const Tensor& x, const LayerContext& ctx) {
  Forward result;
  std::vector<Tensor>& saved = result.saved.tensors;
  // Main path; `current` is the input of pair i > 0, then the main path's output.
  Tensor current;
  for (size_t i = 0; i < path_.size(); ++i) {
    const Tensor& input = i == 0 ? x : current;
    Forward normed = path_[i].bn->forward_consuming(path_[i].conv->apply(input, ctx), ctx);
    append_buffer_update(result, normed);
    if (ctx.training) {
      saved.push_back(i == 0 ? x : std::move(current));
      for (Tensor& t : normed.saved.tensors) saved.push_back(std::move(t));
    }
    current = std::move(normed.output);
    if (i + 1 < path_.size()) relu_in_place(ctx.kernels, current);
  }
  if (has_projection()) {
    Forward projected = shortcut_.bn->forward_consuming(shortcut_.conv->apply(x, ctx), ctx);
    append_buffer_update(result, projected);
    if (ctx.training) {
      for (Tensor& t : projected.saved.tensors) saved.push_back(std::move(t));
    }
    add_into(current, projected.output);
  } else {
    add_into(current, x);
  }
  relu_in_place(ctx.kernels, current);
  if (ctx.training) saved.push_back(current);
  result.output = std::move(current);
  return result;
}

Tensor ResidualBlock::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == num_saved(),
        "ResidualBlock::backward: nothing saved (forward not in training?)");
  const std::span<const Tensor> all(saved.tensors);
  const Tensor& y = all.back();
  check(dy.shape() == y.shape(), "ResidualBlock::backward: dy {} does not match y {}", dy.shape(),
        y.shape());
  LayerContext inner = ctx;
  inner.need_input_grad = true;
  // Through the final ReLU (its output is positive exactly where its input is).
  Tensor dsum(dy.shape());
  kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, y.data(), dy.data(),
                            dsum.data(), dsum.numel());
  // Main path, last pair first; pair i's conv input is also the output of the ReLU before it.
  // The last pair reads dsum itself (the shortcut needs it too), not a copy; a pair's output
  // gradient is freed once its batch norm has used it, before the conv allocates its input's.
  Tensor grad;
  for (size_t i = path_.size(); i-- > 0;) {
    const auto pair_saved = all.subspan(i * kSavedPerConvBn, kSavedPerConvBn);
    const Tensor& upstream = i + 1 == path_.size() ? dsum : grad;
    const Tensor dconv = path_[i].bn->backward_from(
        upstream, pair_saved.subspan(Conv2d::kSavedTensors, BatchNorm2d::kSavedTensors), inner);
    grad = Tensor();
    grad = path_[i].conv->backward_from(dconv, pair_saved.subspan(0, Conv2d::kSavedTensors),
                                        i == 0 ? ctx : inner);
    if (i > 0) {
      kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, pair_saved[0].data(),
                                grad.data(), grad.data(), grad.numel());
    }
  }
  if (has_projection()) {
    const auto bn_saved = all.subspan(path_.size() * kSavedPerConvBn, BatchNorm2d::kSavedTensors);
    const Tensor dconv = shortcut_.bn->backward_from(dsum, bn_saved, inner);
    dsum = Tensor();  // used up: freed before the shortcut conv allocates its input gradient
    const Tensor dx_shortcut =
        shortcut_.conv->backward_from(dconv, all.subspan(0, Conv2d::kSavedTensors), ctx);
    if (!ctx.need_input_grad) return {};
    add_into(grad, dx_shortcut);
  } else {
    if (!ctx.need_input_grad) return {};
    add_into(grad, dsum);
  }
  return grad;
}

Tensor ResidualBlock::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  check(saved.tensors.size() == num_saved(),
        "ResidualBlock::backward: nothing saved (forward not in training?)");
  std::vector<Tensor>& all = saved.tensors;
  check(dy.shape() == all.back().shape(), "ResidualBlock::backward: dy {} does not match y {}",
        dy.shape(), all.back().shape());
  LayerContext inner = ctx;
  inner.need_input_grad = true;
  // What backward_weight reads, in the order num_weight_kept() counts it: each pair's part is
  // filled as backward reaches it, last pair first.
  std::vector<Tensor> kept(num_weight_kept());
  // As in backward: through the final ReLU (y is used up), then the pairs, last first, each
  // batch norm's saved tensors freed once it has run (its conv's output gradient, kept, takes
  // their place).
  Tensor dsum(dy.shape());
  kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, all.back().data(), dy.data(),
                            dsum.data(), dsum.numel());
  all.back() = Tensor();
  Tensor grad;
  for (size_t i = path_.size(); i-- > 0;) {
    const auto pair_saved = std::span(all).subspan(i * kSavedPerConvBn, kSavedPerConvBn);
    const auto pair_kept = std::span(kept).subspan(i * kWeightKeptPerConvBn, kWeightKeptPerConvBn);
    const Tensor& upstream = i + 1 == path_.size() ? dsum : grad;
    std::vector<Tensor> parts;
    Tensor dconv = path_[i].bn->backward_input_from(
        upstream, pair_saved.subspan(Conv2d::kSavedTensors, BatchNorm2d::kSavedTensors), inner,
        parts);
    for (Tensor& t : pair_saved.subspan(Conv2d::kSavedTensors)) t = Tensor();
    grad = Tensor();
    grad = path_[i].conv->backward_data(dconv, i == 0 ? ctx : inner);
    if (i > 0) {
      kernels::eltwise_backward(ctx.kernels, kernels::EltwiseKind::kRelu, pair_saved[0].data(),
                                grad.data(), grad.data(), grad.numel());
    }
    pair_kept[0] = std::move(pair_saved[0]);
    pair_kept[Conv2d::kSavedTensors] = std::move(dconv);
    std::move(parts.begin(), parts.end(), pair_kept.begin() + Conv2d::kSavedTensors + 1);
  }
  Tensor dx_shortcut;
  if (has_projection()) {
    const auto bn_saved =
        std::span(all).subspan(path_.size() * kSavedPerConvBn, BatchNorm2d::kSavedTensors);
    const auto shortcut_kept = std::span(kept).last(kWeightKeptShortcut);
    std::vector<Tensor> parts;
    Tensor dconv = shortcut_.bn->backward_input_from(dsum, bn_saved, inner, parts);
    for (Tensor& t : bn_saved) t = Tensor();
    dsum = Tensor();  // used up: freed before the shortcut conv allocates its input gradient
    dx_shortcut = shortcut_.conv->backward_data(dconv, ctx);
    shortcut_kept[0] = std::move(dconv);
    std::move(parts.begin(), parts.end(), shortcut_kept.begin() + 1);
  }
  all = std::move(kept);
  if (!ctx.need_input_grad) return {};
  add_into(grad, has_projection() ? dx_shortcut : dsum);
  return grad;
}

void ResidualBlock::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)dy;
  check(saved.tensors.size() == num_weight_kept(), "ResidualBlock::backward_weight: nothing kept");
  const std::span<const Tensor> all(saved.tensors);
  // What backward adds, pair by pair: the conv's dweight from its input and output gradient, the
  // batch norm's parts.
  auto add = [&ctx](const ConvBn& pair, std::span<const Tensor> conv_input, const Tensor& dconv,
                    std::span<const Tensor> parts) {
    pair.conv->backward_weight_from(dconv, conv_input, ctx);
    pair.bn->backward_weight_from(parts);
  };
  for (size_t i = 0; i < path_.size(); ++i) {
    const auto pair_kept = all.subspan(i * kWeightKeptPerConvBn, kWeightKeptPerConvBn);
    add(path_[i], pair_kept.first(Conv2d::kSavedTensors), pair_kept[Conv2d::kSavedTensors],
        pair_kept.last(BatchNorm2d::kWeightKeptTensors));
  }
  if (has_projection()) {
    const auto shortcut_kept = all.last(kWeightKeptShortcut);
    add(shortcut_, all.first(Conv2d::kSavedTensors), shortcut_kept[0],
        shortcut_kept.last(BatchNorm2d::kWeightKeptTensors));
  }
}

int64_t ResidualBlock::buffer_update_size() const {
  int64_t size = 0;
  for (const auto& [prefix, layer] : sub_layers()) size += layer->buffer_update_size();
  return size;
}

void ResidualBlock::apply_buffer_update(std::span<const float> update) {
  check(update.size() == static_cast<size_t>(buffer_update_size()),
        "ResidualBlock: a buffer update of {} floats, expected {}", update.size(),
        buffer_update_size());
  for (const auto& [prefix, layer] : sub_layers()) {
    const auto size = static_cast<size_t>(layer->buffer_update_size());
    layer->apply_buffer_update(update.first(size));
    update = update.subspan(size);
  }
}

double ResidualBlock::forward_flops_per_example() const {
  double flops = 0.0;
  for (const auto& [prefix, layer] : sub_layers()) flops += layer->forward_flops_per_example();
  // ReLUs, the shortcut sum and the final ReLU: about one operation per element each.
  for (size_t i = 0; i + 1 < path_.size(); ++i) {
    flops += static_cast<double>(path_[i].bn->output_shape().numel());
  }
  return flops + 2.0 * static_cast<double>(output_shape().numel());
}

LayerNeeds ResidualBlock::needs() const {
  // Keeps what forward saves: per conv-bn pair of the main path the conv's input and the batch
  // norm's tensors, the shortcut's batch norm's (its conv's input is x, kept once), then y.
  const Shape& input = path_.front().conv->input_shape();
  const Shape output = output_shape();
  const double x = float_bytes(input.numel()), y = float_bytes(output.numel());
  LayerNeeds needs;
  for (const ConvBn& pair : path_) {
    needs.keep_all_of(pair.conv->needs());
    needs.keep_all_of(pair.bn->needs());
  }
  if (has_projection()) needs.keep_all_of(shortcut_.bn->needs());
  needs.kept_tensor_bytes.push_back(y);

  // Backward beyond x and y: dy and the sum's gradient (y each) stay while the pairs run one
  // after another, last first; a pair's batch norm holds the gradients of its output o (the
  // sum's for the last pair) and of its conv's output (o), its conv those of o and of its input;
  // then the projection's batch norm beside the main path's dx, and (the sum's gradient freed)
  // its conv.
  double peak = 3.0 * y;  // the last pair's batch norm: dy, the sum's gradient and its dconv
  double smallest = std::min(x, y);
  for (size_t i = 0; i < path_.size(); ++i) {
    const double pair_input = float_bytes(path_[i].conv->input_shape().numel());
    const double pair_output = float_bytes(path_[i].bn->output_shape().numel());
    if (i + 1 < path_.size()) peak = std::max(peak, 2.0 * y + 2.0 * pair_output);
    peak = std::max(peak, 2.0 * y + pair_output + pair_input);
    smallest = std::min(smallest, pair_output);
  }
  peak = has_projection() ? std::max({peak, 3.0 * y + x, 2.0 * y + 2.0 * x})
                          : std::max(peak, 2.0 * y + x);
  needs.backward_temporary_bytes = peak - x - y;
  needs.smallest_temporary_bytes = smallest;
  // Evaluation, beyond x and y (no pair's tensors are saved): a pair's conv output beside its
  // batch norm's output and the pair's input (x for the first, held anyway); the projection's
  // two beside the main path's output, which the sum then takes in place.
  double evaluation_peak = 0.0;
  for (size_t i = 0; i < path_.size(); ++i) {
    const double pair_input = i == 0 ? 0.0 : float_bytes(path_[i].conv->input_shape().numel());
    const double pair_output = float_bytes(path_[i].bn->output_shape().numel());
    evaluation_peak = std::max(evaluation_peak, pair_input + 2.0 * pair_output);
  }
  if (has_projection()) evaluation_peak = std::max(evaluation_peak, 3.0 * y);
  needs.evaluation_temporary_bytes = std::max(0.0, evaluation_peak - y);
  // Its widest batch norm's per-channel partial sums, one batch norm at a time.
  needs.backward_fixed_tensor_bytes = path_.back().bn->needs().backward_fixed_tensor_bytes;
  needs.backward_flops = matrix_product_backward_flops(forward_flops_per_example(), global_index());
  // Split (num_weight_kept's order): per pair its conv's input and output gradient (the size of
  // the pair's output) and its batch norm's parts, then the shortcut's conv output gradient (y)
  // and parts. W runs the convs' weight products.
  needs.splits_backward = true;
  for (const ConvBn& pair : path_) {
    needs.keep_weight_work_of(pair.conv->needs());
    needs.weight_work_tensor_bytes.push_back(float_bytes(pair.bn->output_shape().numel()));
    needs.keep_weight_work_of(pair.bn->needs());
  }
  if (has_projection()) {
    needs.weight_grad_flops += shortcut_.conv->needs().weight_grad_flops;
    needs.weight_work_tensor_bytes.push_back(y);
    needs.keep_weight_work_of(shortcut_.bn->needs());
  }
  // I, beyond what forward saved and dy: the sum's gradient beside y (then y is freed); per pair
  // its batch norm's dconv (kept) beside its saved input (then freed) and the upstream gradient
  // (the pair's output) for all but the last pair, then the conv's input gradient; the
  // projection's dconv beside the main path's dx, then (dsum and its batch norm's input freed)
  // the shortcut's dx beside it.
  double input_peak = y;
  for (size_t i = 0; i < path_.size(); ++i) {
    const double pair_input = float_bytes(path_[i].conv->input_shape().numel());
    const double pair_output = float_bytes(path_[i].bn->output_shape().numel());
    if (i + 1 < path_.size()) input_peak = std::max(input_peak, 2.0 * pair_output);
    input_peak = std::max(input_peak, pair_input);
  }
  if (has_projection()) input_peak = std::max({input_peak, x + y, 2.0 * x - y});
  needs.backward_input_temporary_bytes = input_peak - x;
  return needs;
}

}  // namespace mpipe::nn
