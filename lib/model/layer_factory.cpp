// The table from YAML layer types to layer constructors (their options: model/layer_options.h).
#include "model/layer_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <span>

#include "core/error.h"
#include "model/layer_attrs.h"
#include "model/layer_options.h"
#include "nn/activation.h"
#include "nn/add.h"
#include "nn/attention.h"
#include "nn/batch_norm2d.h"
#include "nn/concat.h"
#include "nn/conv2d.h"
#include "nn/cross_attention.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/flatten.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/pooling.h"
#include "nn/residual_block.h"
#include "nn/rms_norm.h"
#include "nn/separable_cell.h"
#include "nn/transformer_block.h"
#include "nn/upsample.h"

namespace mpipe::model {
namespace {

using Builder =
    std::function<std::unique_ptr<nn::Layer>(LayerAttrs&, const Shape&, int, const ModelContext&)>;

std::unique_ptr<nn::Layer> linear(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const LinearOptions o = read_linear(a);
  return std::make_unique<nn::Linear>(i, in, o.units, o.bias, o.init);
}

Builder activation(kernels::EltwiseKind kind) {
  return [kind](LayerAttrs&, const Shape& in, int i, const ModelContext&) {
    return std::make_unique<nn::Activation>(i, in, kind);
  };
}

std::unique_ptr<nn::Layer> dropout(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  return std::make_unique<nn::Dropout>(i, in, read_dropout(a).rate);
}

std::unique_ptr<nn::Layer> flatten(LayerAttrs&, const Shape& in, int i, const ModelContext&) {
  return std::make_unique<nn::Flatten>(i, in);
}

std::unique_ptr<nn::Layer> conv2d(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const Conv2dOptions o = read_conv2d(a);
  return std::make_unique<nn::Conv2d>(i, in, o.channels, o.kernel, o.stride, o.padding, o.dilation,
                                      o.groups, o.bias);
}

std::unique_ptr<nn::Layer> batch_norm2d(LayerAttrs& a, const Shape& in, int i,
                                        const ModelContext&) {
  const BatchNorm2dOptions o = read_batch_norm2d(a);
  return std::make_unique<nn::BatchNorm2d>(i, in, o.momentum, o.eps);
}

std::unique_ptr<nn::Layer> max_pool2d(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const PoolOptions o = read_max_pool2d(a);
  return std::make_unique<nn::MaxPool2d>(i, in, o.kernel, o.stride, o.padding);
}

std::unique_ptr<nn::Layer> avg_pool2d(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const PoolOptions o = read_avg_pool2d(a);
  return std::make_unique<nn::AvgPool2d>(i, in, o.kernel, o.stride, o.padding, o.count_include_pad);
}

std::unique_ptr<nn::Layer> global_avg_pool(LayerAttrs&, const Shape& in, int i,
                                           const ModelContext&) {
  return std::make_unique<nn::GlobalAvgPool>(i, in);
}

std::unique_ptr<nn::Layer> upsample(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  return std::make_unique<nn::Upsample>(i, in, read_upsample(a).scale);
}

std::unique_ptr<nn::Layer> residual_block(LayerAttrs& a, const Shape& in, int i,
                                          const ModelContext&) {
  const ResidualBlockOptions o = read_residual_block(a);
  return std::make_unique<nn::ResidualBlock>(i, in, o.channels, o.stride, o.bottleneck);
}

std::unique_ptr<nn::Layer> separable_cell(LayerAttrs& a, const Shape& in, int i,
                                          const ModelContext&) {
  const SeparableCellOptions o = read_separable_cell(a, in);
  return std::make_unique<nn::SeparableCell>(i, in, o.channels, o.kernel, o.stride);
}

std::unique_ptr<nn::Layer> embedding(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const EmbeddingOptions o = read_embedding(a, in);
  return std::make_unique<nn::Embedding>(i, in, o.vocab, o.dim, o.max_len);
}

std::unique_ptr<nn::Layer> layer_norm(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  return std::make_unique<nn::LayerNorm>(i, in, read_layer_norm(a).eps);
}

std::unique_ptr<nn::Layer> rms_norm(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  return std::make_unique<nn::RmsNorm>(i, in, read_rms_norm(a).eps);
}

std::unique_ptr<nn::Layer> attention(LayerAttrs& a, const Shape& in, int i, const ModelContext&) {
  const AttentionOptions o = read_attention(a, /*reads_ids=*/false);
  return std::make_unique<nn::SelfAttention>(i, in, o.heads, o.dropout, o.rotary, 0.02f, o.causal,
                                             std::nullopt, o.kv_heads);
}

std::unique_ptr<nn::Layer> transformer_block(LayerAttrs& a, const Shape& in, int i,
                                             const ModelContext& model) {
  const AttentionOptions o = read_transformer_block(a);
  return std::make_unique<nn::TransformerBlock>(i, in, o.heads, o.mlp_ratio, o.dropout,
                                                nn::TransformerBlockVariant{
                                                    .norm = o.norm,
                                                    .mlp = o.mlp,
                                                    .rotary = o.rotary,
                                                    .kv_heads = o.kv_heads,
                                                    .residual_std = model.residual_std,
                                                });
}

// A kind that reads values (a model graph's `read`) also takes their shapes; shape errors name
// the read's own key.
using ReadingBuilder = std::function<std::unique_ptr<nn::Layer>(
    const LayerSpec&, LayerAttrs&, const Shape&, std::span<const Shape>, int, const ModelContext&)>;

// An AttributeError naming read r's own line: its value has the wrong shape for this layer.
[[noreturn]] void bad_read(const LayerSpec& spec, size_t r, const Shape& shape,
                           const std::string& needs) {
  throw AttributeError(fmt::format("{}: '{}' has shape {}, but {} needs {}",
                                   spec.reads[r].where.prefix(), spec.reads[r].name, shape,
                                   spec.kind, needs));
}

// An AttributeError naming the first read beyond the `most` a layer takes.
void check_read_count(const LayerSpec& spec, size_t most, const std::string& which) {
  if (spec.reads.size() > most) {
    throw AttributeError(fmt::format("{}: {} reads {}, nothing more",
                                     spec.reads[most].where.prefix(), spec.kind, which));
  }
}

// Read r holds the token ids of a sequence of `len` positions: one example's shape [len].
void check_ids_read(const LayerSpec& spec, size_t r, std::span<const Shape> reads, int64_t len,
                    const std::string& whose) {
  if (reads[r] != Shape{len}) bad_read(spec, r, reads[r], fmt::format("{} ids [{}]", whose, len));
}

std::unique_ptr<nn::Layer> add(const LayerSpec& spec, LayerAttrs&, const Shape& in,
                               std::span<const Shape> reads, int i, const ModelContext&) {
  for (size_t r = 0; r < reads.size(); ++r) {
    if (reads[r] != in) {  // (an AttributeError: it names the read's own line)
      throw AttributeError(fmt::format("{}: '{}' has shape {}, but the main input has {}",
                                       spec.reads[r].where.prefix(), spec.reads[r].name, reads[r],
                                       in));
    }
  }
  return std::make_unique<nn::Add>(i, in, std::vector<Shape>(reads.begin(), reads.end()));
}

std::unique_ptr<nn::Layer> concat(const LayerSpec& spec, LayerAttrs&, const Shape& in,
                                  std::span<const Shape> reads, int i, const ModelContext&) {
  if (in.rank() >= 1) {
    const std::vector<int64_t> rest(in.dims().begin() + 1, in.dims().end());
    for (size_t r = 0; r < reads.size(); ++r) {
      const std::vector<int64_t>& dims = reads[r].dims();
      if (dims.empty() || !std::equal(dims.begin() + 1, dims.end(), rest.begin(), rest.end())) {
        std::vector<std::string> needs = {"N"};
        for (int64_t d : rest) needs.push_back(std::to_string(d));
        bad_read(spec, r, reads[r],
                 fmt::format("[{}] (the main input {} past its first axis)", fmt::join(needs, ", "),
                             in));
      }
    }
  }
  return std::make_unique<nn::Concat>(i, in, std::vector<Shape>(reads.begin(), reads.end()));
}

// attention with `read: [IDS]`: keys whose token id is pad_id are padding.
std::unique_ptr<nn::Layer> padded_attention(const LayerSpec& spec, LayerAttrs& a, const Shape& in,
                                            std::span<const Shape> reads, int i,
                                            const ModelContext&) {
  check_read_count(spec, 1, "one value (its sequence's token ids)");
  if (in.rank() == 2) check_ids_read(spec, 0, reads, in[0], "its input's token");
  const AttentionOptions o = read_attention(a, /*reads_ids=*/true);
  return std::make_unique<nn::SelfAttention>(i, in, o.heads, o.dropout, o.rotary, 0.02f, o.causal,
                                             o.padding, o.kv_heads);
}

// cross_attention with `read: [MEMORY]` or `read: [MEMORY, IDS]`.
std::unique_ptr<nn::Layer> cross_attention(const LayerSpec& spec, LayerAttrs& a, const Shape& in,
                                           std::span<const Shape> reads, int i,
                                           const ModelContext& model) {
  check_read_count(spec, 2, "a memory and its token ids");
  if (in.rank() == 2) {
    const Shape& memory = reads[0];
    if (memory.rank() != 2 || memory[0] <= 0 || memory[1] != in[1]) {
      bad_read(spec, 0, memory, fmt::format("a memory [S, {}] (its input's d)", in[1]));
    }
    if (reads.size() == 2) check_ids_read(spec, 1, reads, memory[0], "the memory's token");
  }
  const bool reads_ids = reads.size() == 2;
  const CrossAttentionOptions o = read_cross_attention(a, reads_ids);
  return std::make_unique<nn::CrossAttention>(
      i, in, reads[0], o.heads, o.dropout, model.residual_std,
      reads_ids ? std::optional<nn::KeyPadding>(o.padding) : std::nullopt);
}

const std::map<std::string, ReadingBuilder>& reading_builders() {
  static const std::map<std::string, ReadingBuilder> table = {
      {"add", add},
      {"attention", padded_attention},
      {"concat", concat},
      {"cross_attention", cross_attention},
  };
  return table;
}

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"linear", linear},
      {"relu", activation(kernels::EltwiseKind::kRelu)},
      {"gelu", activation(kernels::EltwiseKind::kGelu)},
      {"tanh", activation(kernels::EltwiseKind::kTanh)},
      {"dropout", dropout},
      {"flatten", flatten},
      {"conv2d", conv2d},
      {"batch_norm2d", batch_norm2d},
      {"max_pool2d", max_pool2d},
      {"avg_pool2d", avg_pool2d},
      {"global_avg_pool", global_avg_pool},
      {"upsample", upsample},
      {"residual_block", residual_block},
      {"separable_cell", separable_cell},
      {"embedding", embedding},
      {"layer_norm", layer_norm},
      {"rms_norm", rms_norm},
      {"attention", attention},
      {"transformer_block", transformer_block},
  };
  return table;
}

}  // namespace

std::vector<std::string> known_layer_kinds() {
  std::set<std::string> kinds;
  for (const auto& [kind, builder] : builders()) kinds.insert(kind);
  for (const auto& [kind, builder] : reading_builders()) kinds.insert(kind);
  return {kinds.begin(), kinds.end()};
}

std::vector<std::string> reading_layer_kinds() {
  std::vector<std::string> kinds;
  for (const auto& [kind, builder] : reading_builders()) kinds.push_back(kind);
  return kinds;
}

std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input,
                                      std::span<const Shape> reads, int global_index,
                                      const ModelContext& model) {
  auto it = builders().find(spec.kind);
  auto reading = reading_builders().find(spec.kind);
  check_input(it != builders().end() || reading != reading_builders().end(),
              "{}.type: unknown layer type '{}' (known: {})", spec.where.prefix(), spec.kind,
              fmt::join(known_layer_kinds(), ", "));
  if (reading == reading_builders().end() && !spec.reads.empty()) {
    throw InputError(fmt::format("{}: {} takes no extra inputs (layers that read: {})",
                                 spec.reads.front().where.prefix(), spec.kind,
                                 fmt::join(reading_layer_kinds(), ", ")));
  }
  if (it == builders().end() && spec.reads.empty()) {
    throw InputError(fmt::format("{}: {} needs at least one value to read (read: [NAME])",
                                 spec.where.prefix(), spec.kind));
  }
  LayerAttrs attrs(spec);
  std::unique_ptr<nn::Layer> layer;
  try {
    // A kind with both forms (attention) reads when its entry has a `read`.
    layer = !spec.reads.empty() ? reading->second(spec, attrs, input, reads, global_index, model)
                                : it->second(attrs, input, global_index, model);
  } catch (const AttributeError&) {
    throw;  // already names the attribute's own line
  } catch (const InputError& e) {
    // A shape error from the layer: name the entry's line, the layer index and the input.
    throw InputError(
        fmt::format("{} ({}, input {}): {}", spec.where.prefix(), spec.kind, input, e.what()));
  }
  attrs.finish();
  return layer;
}

std::unique_ptr<nn::Layer> make_layer(const LayerSpec& spec, const Shape& input, int global_index,
                                      const ModelContext& model) {
  return make_layer(spec, input, {}, global_index, model);
}

}  // namespace mpipe::model
