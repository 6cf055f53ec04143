// Every layer kind's attribute names, defaults and bounds.
#include "model/layer_options.h"

#include <string>
#include <vector>

namespace mpipe::model {
namespace {

// Dropout rates stop short of 1: a rate of 1 would scale the kept values by 1 / 0.
constexpr double kMaxDropout = 0.999;

// Channels of a [C, H, W] input, or 0 when the input is not an image (the layer reports it).
int64_t input_channels(const Shape& in) { return in.rank() == 3 ? in[0] : 0; }

// rotary (off) and rotary_base (10000) of attention and transformer_block.
nn::RotaryOptions read_rotary(LayerAttrs& a) {
  return {.enabled = a.flag("rotary", false),
          .base = a.number("rotary_base", nn::RotaryOptions{}.base, 2.0, 1e12)};
}

// One of an enum's names, by its table.
template <typename E, size_t N>
E read_choice(LayerAttrs& a, const std::string& key, const EnumNames<E, N>& names, E fallback) {
  std::vector<std::string> choices;
  for (const auto& [name, value] : names) choices.emplace_back(name);
  return *value_named(names, a.text(key, std::string(name_of(names, fallback)), choices));
}

// pad_id (0) of a layer that reads token ids for key padding.
nn::KeyPadding read_padding(LayerAttrs& a, bool reads_ids) {
  return {.pad_id = reads_ids ? a.integer("pad_id", 0, 0) : 0};
}

PoolOptions read_pool(LayerAttrs& a) {
  PoolOptions o;
  o.kernel = a.integer("kernel", 1);
  o.stride = a.integer("stride", o.kernel, 1);
  o.padding = a.integer("padding", 0, 0);
  return o;
}

}  // namespace

LinearOptions read_linear(LayerAttrs& a) {
  return {.units = a.integer("units", 1),
          .bias = a.flag("bias", true),
          .init = a.text("init", "kaiming", {"kaiming", "xavier"}) == "xavier"
                      ? nn::Init::kXavierUniform
                      : nn::Init::kKaimingUniform,
          .tie = a.text("tie", "", {"embedding"}) == "embedding"};
}

DropoutOptions read_dropout(LayerAttrs& a) {
  return {.rate = a.number("rate", 0.1, 0.0, kMaxDropout)};
}

Conv2dOptions read_conv2d(LayerAttrs& a) {
  return {.channels = a.integer("channels", 1),
          .kernel = a.integer("kernel", 1),
          .stride = a.integer("stride", 1, 1),
          .padding = a.integer("padding", 0, 0),
          .dilation = a.integer("dilation", 1, 1),
          .groups = a.integer("groups", 1, 1),
          .bias = a.flag("bias", true)};
}

BatchNorm2dOptions read_batch_norm2d(LayerAttrs& a) {
  return {.momentum = a.number("momentum", 0.1, 0.0, 1.0),
          .eps = a.number("eps", 1e-5, 1e-12, 1.0)};
}

PoolOptions read_max_pool2d(LayerAttrs& a) { return read_pool(a); }

PoolOptions read_avg_pool2d(LayerAttrs& a) {
  PoolOptions o = read_pool(a);
  o.count_include_pad = a.flag("count_include_pad", true);
  return o;
}

UpsampleOptions read_upsample(LayerAttrs& a) { return {.scale = a.integer("scale", 2, 1)}; }

ResidualBlockOptions read_residual_block(LayerAttrs& a) {
  return {.channels = a.integer("channels", 1),
          .stride = a.integer("stride", 1, 1),
          .bottleneck = a.flag("bottleneck", false)};
}

SeparableCellOptions read_separable_cell(LayerAttrs& a, const Shape& input) {
  return {.channels = a.integer("channels", input_channels(input), 1),
          .kernel = a.integer("kernel", 3, 1),
          .stride = a.integer("stride", 1, 1)};
}

EmbeddingOptions read_embedding(LayerAttrs& a, const Shape& input) {
  return {.vocab = a.integer("vocab", 2),
          .dim = a.integer("dim", 1),
          .max_len = a.integer("max_len", input.rank() == 1 ? input[0] : 1, 1),
          .tie = a.text("tie", "", {"embedding"}) == "embedding"};
}

LayerNormOptions read_layer_norm(LayerAttrs& a) {
  return {.eps = a.number("eps", 1e-5, 1e-12, 1.0)};
}

LayerNormOptions read_rms_norm(LayerAttrs& a) { return read_layer_norm(a); }

AttentionOptions read_attention(LayerAttrs& a, bool reads_ids) {
  const int64_t heads = a.integer("heads", 1);
  return {.heads = heads,
          .kv_heads = a.integer("kv_heads", heads, 1),
          .mlp_ratio = AttentionOptions{}.mlp_ratio,
          .dropout = a.number("dropout", 0.0, 0.0, kMaxDropout),
          .rotary = read_rotary(a),
          .causal = a.flag("causal", true),
          .padding = read_padding(a, reads_ids)};
}

CrossAttentionOptions read_cross_attention(LayerAttrs& a, bool reads_ids) {
  return {.heads = a.integer("heads", 1),
          .dropout = a.number("dropout", 0.0, 0.0, kMaxDropout),
          .padding = read_padding(a, reads_ids)};
}

AttentionOptions read_transformer_block(LayerAttrs& a) {
  const int64_t heads = a.integer("heads", 1);
  return {.heads = heads,
          .kv_heads = a.integer("kv_heads", heads, 1),
          .mlp_ratio = a.integer("mlp_ratio", 4, 1),
          .dropout = a.number("dropout", 0.0, 0.0, kMaxDropout),
          .rotary = read_rotary(a),
          .norm = read_choice(a, "norm", nn::kNormNames, nn::NormKind::kLayerNorm),
          .mlp = read_choice(a, "mlp", nn::kMlpNames, nn::MlpKind::kGelu)};
}

}  // namespace mpipe::model
